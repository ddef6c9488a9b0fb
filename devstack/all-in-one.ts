/** Development: api, worker and bridge in one process. Production runs them separately. */
import { loadConfig } from '../src/config/index.js';
import { runService } from '../src/process/lifecycle.js';
import { createLogger } from '../src/observability/log.js';
import { startApi } from '../src/api/index.js';
import { startBridge } from '../src/bridge/index.js';
import { startWorker } from '../src/worker/index.js';

runService('all', async () => {
  const config = loadConfig('all');
  const logger = (name: string) => createLogger({ level: config.logLevel, name });
  const worker = await startWorker(config, logger('worker'));
  const bridge = await startBridge(config, logger('bridge'));
  const api = await startApi(config, logger('api'));
  return {
    async stop() {
      await api.stop();
      await bridge.stop();
      await worker.stop();
    },
    ended: Promise.race([api.ended, bridge.ended, worker.ended]),
    log: logger('all'),
  };
});

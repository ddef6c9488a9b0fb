import { loadConfig } from '../config/index.js';
import { runService } from '../process/lifecycle.js';
import { createLogger } from '../observability/log.js';
import { startWorker } from '../worker/index.js';

runService('worker', async () => {
  const config = loadConfig('worker');
  const log = createLogger({ level: config.logLevel, name: 'worker' });
  const worker = await startWorker(config, log);
  return { stop: () => worker.stop(), ended: worker.ended, log };
});

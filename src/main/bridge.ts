import { loadConfig } from '../config/index.js';
import { runService } from '../process/lifecycle.js';
import { createLogger } from '../observability/log.js';
import { startBridge } from '../bridge/index.js';

runService('bridge', async () => {
  const config = loadConfig('bridge');
  const log = createLogger({ level: config.logLevel, name: 'bridge' });
  const bridge = await startBridge(config, log);
  return { stop: () => bridge.stop(), ended: bridge.ended, log };
});

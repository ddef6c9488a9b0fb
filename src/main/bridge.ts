import { loadConfig } from '../config/index.js';
import { runService } from '../lifecycle.js';
import { createLogger } from '../log.js';
import { startBridge } from '../bridge/index.js';

runService('bridge', async () => {
  const config = loadConfig('bridge');
  const log = createLogger({ level: config.logLevel, name: 'bridge' });
  const bridge = await startBridge(config, log);
  return { stop: () => bridge.stop(), ended: bridge.ended, log };
});

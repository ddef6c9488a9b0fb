import { loadConfig } from '../config/index.js';
import { runService } from '../lifecycle.js';
import { createLogger } from '../log.js';
import { startBridge } from '../bridge/index.js';

runService('bridge', async () => {
  const config = loadConfig('bridge');
  const bridge = await startBridge(config, createLogger({ level: config.logLevel, name: 'bridge' }));
  return () => bridge.stop();
});

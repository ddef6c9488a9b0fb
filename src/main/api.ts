import { loadConfig } from '../config/index.js';
import { runService } from '../lifecycle.js';
import { createLogger } from '../log.js';
import { startApi } from '../api/index.js';

runService('api', async () => {
  const config = loadConfig('api');
  const api = await startApi(config, createLogger({ level: config.logLevel, name: 'api' }));
  return () => api.stop();
});

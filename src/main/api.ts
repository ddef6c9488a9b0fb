import { loadConfig } from '../config/index.js';
import { runService } from '../process/lifecycle.js';
import { createLogger } from '../observability/log.js';
import { startApi } from '../api/index.js';

runService('api', async () => {
  const config = loadConfig('api');
  const log = createLogger({ level: config.logLevel, name: 'api' });
  const api = await startApi(config, log);
  return { stop: () => api.stop(), ended: api.ended, log };
});

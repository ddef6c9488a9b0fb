import { loadConfig } from '../config/index.js';
import { runService } from '../lifecycle.js';
import { createLogger } from '../log.js';
import { startWorker } from '../worker/index.js';

runService('worker', async () => {
  const config = loadConfig('worker');
  const worker = await startWorker(config, createLogger({ level: config.logLevel, name: 'worker' }));
  return () => worker.stop();
});

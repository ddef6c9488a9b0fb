/** Where each process listens: the api on HOST:PORT, worker and bridge ops on HOST:<their port>. */
import { section } from '../section.js';
import { hostName, port } from '../vars.js';

export const apiListenSection = section({ HOST: hostName('127.0.0.1'), PORT: port(8080) }, (v) => ({ http: { host: v.HOST, port: v.PORT } }));

export const workerListenSection = section(
  { HOST: hostName('127.0.0.1'), WORKER_METRICS_PORT: port(9464), WORKER_SDK_METRICS_PORT: port(9466) },
  (v) => ({ http: { host: v.HOST }, workerMetricsPort: v.WORKER_METRICS_PORT, workerSdkMetricsPort: v.WORKER_SDK_METRICS_PORT }),
);

export const bridgeListenSection = section({ HOST: hostName('127.0.0.1'), BRIDGE_METRICS_PORT: port(9465) }, (v) => ({
  http: { host: v.HOST },
  bridgeMetricsPort: v.BRIDGE_METRICS_PORT,
}));

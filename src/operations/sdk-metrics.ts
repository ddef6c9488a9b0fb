/**
 * The Temporal SDK's own metrics (workflow and activity task latencies, poller and slot
 * counts, sticky cache, request failures — all `temporal_*`) on a Prometheus endpoint of
 * their own, served by the SDK's Core at `HOST:WORKER_SDK_METRICS_PORT/metrics`. Core's
 * runtime is process-wide and configured once, before the first connection; port 0 leaves
 * the default runtime (no SDK metrics).
 */
import { Runtime } from '@temporalio/worker';
import type { WorkerConfig } from '../config/index.js';

export function installSdkMetrics(config: Pick<WorkerConfig, 'http' | 'workerSdkMetricsPort'>): string | undefined {
  if (config.workerSdkMetricsPort === 0) return undefined;
  const host = config.http.host.includes(':') ? `[${config.http.host}]` : config.http.host;
  const bindAddress = `${host}:${config.workerSdkMetricsPort}`;
  Runtime.install({
    telemetryOptions: { metrics: { prometheus: { bindAddress, countersTotalSuffix: true, useSecondsForDurations: true } } },
    // The process's lifecycle (src/lifecycle.ts) owns SIGTERM/SIGINT and stops the worker
    // itself; Core's own signal hooks would race it into shutting the worker down twice.
    shutdownSignals: [],
  });
  return bindAddress;
}

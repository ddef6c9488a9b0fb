/**
 * The Temporal SDK's process-wide runtime, installed once by the worker before its first
 * connection (Core's runtime cannot be changed after):
 *
 * - its logs — the TypeScript SDK's own ("Worker state changed"), workflow and activity
 *   context loggers, and Core's, forwarded — go to the process's pino logger with their fields,
 *   so that every line the worker writes is the same JSON (src/observability/log.ts). Core is asked for no
 *   more than the process's `LOG_LEVEL` lets through;
 * - its metrics (workflow and activity task latencies, poller and slot counts, sticky cache,
 *   request failures — all `temporal_*`) on a Prometheus endpoint of their own, served by Core
 *   at `HOST:WORKER_SDK_METRICS_PORT/metrics`; port 0 serves none;
 * - no signal handlers: the process's lifecycle (src/process/lifecycle.ts) owns SIGTERM/SIGINT and
 *   stops the worker itself; Core's own hooks would race it into shutting the worker down twice.
 */
import { Runtime, type TelemetryOptions } from '@temporalio/worker';
import type { LogLevel as SdkLevel, LogMetadata, Logger as SdkLogger } from '@temporalio/common';
import type { WorkerConfig } from '../config/index.js';
import type { LogLevel } from '../config/sections/log.js';
import { errorSummary } from '../observability/error-summary.js';
import type { Logger } from '../observability/log.js';

export interface SdkRuntime {
  /** Where the SDK's metrics are served (`host:port`), or undefined when they are off. */
  readonly metricsAddress: string | undefined;
}

export function installSdkRuntime(config: Pick<WorkerConfig, 'http' | 'workerSdkMetricsPort' | 'logLevel'>, log: Logger): SdkRuntime {
  const metricsAddress = sdkMetricsAddress(config);
  const telemetryOptions: TelemetryOptions = {
    logging: { filter: { core: coreLevel[config.logLevel], other: 'ERROR' }, forward: {} },
    ...(metricsAddress === undefined
      ? {}
      : { metrics: { prometheus: { bindAddress: metricsAddress, countersTotalSuffix: true, useSecondsForDurations: true } } }),
  };
  Runtime.install({ logger: sdkLogger(log), telemetryOptions, shutdownSignals: [] });
  return { metricsAddress };
}

function sdkMetricsAddress(config: Pick<WorkerConfig, 'http' | 'workerSdkMetricsPort'>): string | undefined {
  if (config.workerSdkMetricsPort === 0) return undefined;
  const host = config.http.host.includes(':') ? `[${config.http.host}]` : config.http.host;
  return `${host}:${config.workerSdkMetricsPort}`;
}

/** What Core is asked to forward at each of our levels (the pino logger filters again). */
const coreLevel: Readonly<Record<LogLevel, SdkLevel>> = {
  fatal: 'ERROR',
  error: 'ERROR',
  warn: 'WARN',
  info: 'INFO',
  debug: 'DEBUG',
  trace: 'TRACE',
  silent: 'ERROR',
};

const pinoMethod = { TRACE: 'trace', DEBUG: 'debug', INFO: 'info', WARN: 'warn', ERROR: 'error' } as const satisfies Record<SdkLevel, string>;

/** Keys pino writes itself: an SDK field of that name keeps its value under `sdk_<key>`. */
const ownKeys = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'service', 'name', 'err']);

/** The SDK's logger interface over pino: the message as `msg`, the SDK's metadata as fields, errors summarized (src/observability/error-summary.ts). */
export function sdkLogger(log: Logger): SdkLogger {
  const write = (level: SdkLevel, message: string, meta?: LogMetadata) => log[pinoMethod[level]](fieldsOf(meta), message);
  return {
    log: write,
    trace: (message, meta) => write('TRACE', message, meta),
    debug: (message, meta) => write('DEBUG', message, meta),
    info: (message, meta) => write('INFO', message, meta),
    warn: (message, meta) => write('WARN', message, meta),
    error: (message, meta) => write('ERROR', message, meta),
  };
}

function fieldsOf(meta: LogMetadata | undefined): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  // Symbol keys (Core's own timestamp) are not fields of the line.
  for (const [key, value] of Object.entries(meta ?? {})) {
    const name = ownKeys.has(key) ? `sdk_${key}` : key;
    fields[name] = value instanceof Error ? errorSummary(value) : value;
  }
  return fields;
}

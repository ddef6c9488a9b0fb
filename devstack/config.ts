/**
 * Settings of the local development stack (`make dev`, `make up`, the test harness). Not used
 * in production. Defaults keep clear of the standard ports of system services (5432, 4222,
 * 7233, 8233, 8080…) so a machine that already runs any of them is not disturbed.
 */
import path from 'node:path';
import { ConfigError } from '../src/config/index.js';

export interface DevStackConfig {
  /** Root of everything the stack writes: data, logs, pid files, `env`. */
  readonly dir: string;
  readonly ports: {
    readonly postgres: number;
    readonly nats: number;
    readonly temporal: number;
    readonly temporalUi: number;
    readonly api: number;
    readonly workerMetrics: number;
    readonly bridgeMetrics: number;
    /** The Temporal SDK's Prometheus endpoint on the worker. */
    readonly workerSdkMetrics: number;
    /** The local FCM stand-in (OAuth token endpoint, FCM HTTP v1, simulated phones' inbox). */
    readonly fcm: number;
  };
  /**
   * The environment `make` ran with: the services inherit it, and its service variables win
   * over the stack's defaults (devstack/environment.ts).
   */
  readonly inherited: Readonly<Record<string, string | undefined>>;
  /** Explicit binary paths; otherwise `.tools/venv/bin`, then PATH. */
  /** DEV_TEMPORAL: `dev-server` (the CLI's, with its Web UI; default) or `server` (the real server on PostgreSQL with mTLS). */
  readonly temporal: 'dev-server' | 'server';
  readonly binaries: { readonly temporal?: string; readonly temporalTestServer?: string; readonly natsServer?: string; readonly pgBin?: string };
}

type Env = Readonly<Record<string, string | undefined>>;

export function loadDevStackConfig(projectRoot: string, env: Env = process.env): DevStackConfig {
  const port = (name: string, fallback: number): number => {
    const value = env[name];
    if (value === undefined || value === '') return fallback;
    if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > 65_535) {
      throw new ConfigError(name, `must be a port number from 1 to 65535 (got "${value}")`);
    }
    return Number(value);
  };
  return {
    dir: path.resolve(projectRoot, env.DEV_DIR ?? '.dev'),
    inherited: { ...env },
    temporal: temporalEngine(env.DEV_TEMPORAL),
    ports: {
      postgres: port('DEV_PG_PORT', 55432),
      nats: port('DEV_NATS_PORT', 54222),
      temporal: port('DEV_TEMPORAL_PORT', 57233),
      temporalUi: port('DEV_TEMPORAL_UI_PORT', 58233),
      api: port('DEV_API_PORT', 58080),
      workerMetrics: port('DEV_WORKER_METRICS_PORT', 59464),
      bridgeMetrics: port('DEV_BRIDGE_METRICS_PORT', 59465),
      workerSdkMetrics: port('DEV_WORKER_SDK_METRICS_PORT', 59466),
      fcm: port('DEV_FCM_PORT', 59467),
    },
    binaries: {
      temporal: env.TEMPORAL_BIN || undefined,
      temporalTestServer: env.TEMPORAL_TEST_SERVER_BIN || undefined,
      natsServer: env.NATS_SERVER_BIN || undefined,
      pgBin: env.PG_BIN || undefined,
    },
  };
}

function temporalEngine(value: string | undefined): 'dev-server' | 'server' {
  if (value === undefined || value === '' || value === 'dev-server') return 'dev-server';
  if (value === 'server') return 'server';
  throw new ConfigError('DEV_TEMPORAL', `must be dev-server or server (got "${value}")`);
}

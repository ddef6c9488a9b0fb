/**
 * The benchmark's private stack under .dev/bench: PostgreSQL, NATS JetStream and the Temporal
 * dev server (devstack/services.ts), and the product's own processes (dist/src/bin/{api,worker,
 * bridge}.js) started as daemons with pid files — so `stopEverything` stops them with the
 * services, also after a failure, and the next run cleans up whatever a killed run left.
 */
import { randomBytes } from 'node:crypto';
import { execFile } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { sql } from 'slonik';
import { z } from 'zod';
import { migrateUp } from '../src/db/migrate.js';
import { serviceMigrations } from '../src/db/migrations.js';
import { createDatabasePool, type DatabasePool } from '../src/db/pool.js';
import { daemonPid, logFile, startDaemon, stopDaemon, waitFor } from '../devstack/daemons.js';
import { ensureDatabase, startBackingServices, stopEverything } from '../devstack/services.js';
import { findBinaries, type Binaries } from '../devstack/tools.js';
import { projectRoot } from '../src/paths.js';
import { maintenanceScheduleId } from '../temporal/names.js';
import { removeCluster } from '../devstack/postgres.js';

const run = promisify(execFile);

export const benchDir = path.join(projectRoot, '.dev', 'bench');

/** Fixed ports of the private stack (clear of the dev stack's defaults). */
const ports = { postgres: 56432, nats: 56222, temporal: 56233 };
/** Each set of apps gets its own four ports from here on (two sets may run at once). */
const firstAppPort = 56300;

export type AppName = 'api' | 'worker' | 'bridge';

interface AppPorts {
  readonly api: number;
  readonly workerMetrics: number;
  readonly bridgeMetrics: number;
  readonly workerSdkMetrics: number;
}

export interface BenchStack {
  readonly dir: string;
  readonly binaries: Binaries;
  readonly databaseUrl: string;
  readonly natsUrl: string;
  readonly temporalAddress: string;
  /** The benchmark's own pool (seeding, checks); the apps have theirs. */
  readonly pool: DatabasePool;
  readonly temporal: Client;
  readonly nats: NatsConnection;
  /** The JWT secret of this stack's api (devices' tokens are signed with it). */
  readonly jwtSecret: string;
  /** Starts the product's processes on `taskQueue`; resolves when each is ready. */
  startApps(options: {
    readonly label: string;
    readonly taskQueue: string;
    readonly apps: readonly AppName[];
    readonly sdkMetrics?: boolean;
  }): Promise<RunningApps>;
}

export interface RunningApps {
  readonly apiUrl: string;
  /** `/metrics` of the worker's and the bridge's operations listeners, and of the SDK (when asked for). */
  readonly workerMetricsUrl: string;
  readonly bridgeMetricsUrl: string;
  readonly workerSdkMetricsUrl: string;
  /** Pid of a running app (for its memory). */
  pid(app: AppName): number;
  stop(): Promise<void>;
}

/** Starts the services (after stopping whatever a killed earlier run left) and migrates a fresh database. */
export async function startBenchStack(): Promise<BenchStack> {
  const binaries = findBinaries({});
  await stopEverything(benchDir, binaries.pgBin);
  removeCluster(benchDir);
  rmSync(benchDir, { recursive: true, force: true });
  const services = await startBackingServices({ dir: benchDir, binaries, ports: { ...ports, temporalUi: undefined }, fast: false });
  await ensureDatabase(services.postgres.url('postgres'), 'bench');
  const databaseUrl = services.postgres.url('bench');
  await migrateUp(databaseUrl, serviceMigrations({ withHostStandIn: true }));
  const pool = await createDatabasePool(databaseUrl, { maximumPoolSize: 20, statementTimeoutMs: 300_000 });
  const connection = await Connection.connect({ address: services.temporalAddress });
  const temporal = new Client({ connection, namespace: 'default' });
  const nats = await connect({ servers: services.natsUrl, name: 'bench' });
  const jwtSecret = randomBytes(32).toString('base64url');
  let schedulePaused = false;
  let nextAppPort = firstAppPort;

  const appEnv = (taskQueue: string, sdkMetrics: boolean, appPorts: AppPorts): Record<string, string> => ({
    PATH: '/usr/local/bin:/usr/bin:/bin',
    DATABASE_URL: databaseUrl,
    NATS_URL: services.natsUrl,
    TEMPORAL_ADDRESS: services.temporalAddress,
    TEMPORAL_NAMESPACE: 'default',
    TEMPORAL_TASK_QUEUE: taskQueue,
    HOST: '127.0.0.1',
    PORT: String(appPorts.api),
    WORKER_METRICS_PORT: String(appPorts.workerMetrics),
    BRIDGE_METRICS_PORT: String(appPorts.bridgeMetrics),
    WORKER_SDK_METRICS_PORT: sdkMetrics ? String(appPorts.workerSdkMetrics) : '0',
    JWT_SECRET: jwtSecret,
    // The fake distributor listens on loopback over plain HTTP.
    PUSH_UP_ALLOW_PRIVATE: 'true',
    PUSH_UP_ALLOW_HTTP: 'true',
    // The design's intervals, as in production.
    PUSH_MIN_INTERVAL_MS: '15000',
    PUSH_REWAKE_AFTER_MS: '900000',
    LOG_LEVEL: 'info',
  });

  return {
    dir: benchDir,
    binaries,
    databaseUrl,
    natsUrl: services.natsUrl,
    temporalAddress: services.temporalAddress,
    pool,
    temporal,
    nats,
    jwtSecret,
    async startApps({ label, taskQueue, apps, sdkMetrics = false }) {
      const names = apps.map((app) => [app, `${label}-${app}`] as const);
      const base = nextAppPort;
      nextAppPort += 4;
      const appPorts: AppPorts = { api: base, workerMetrics: base + 1, bridgeMetrics: base + 2, workerSdkMetrics: base + 3 };
      const local = (port: number, path: string) => `http://127.0.0.1:${port}${path}`;
      const readyUrl: Record<AppName, string> = {
        api: local(appPorts.api, '/readyz'),
        worker: local(appPorts.workerMetrics, '/readyz'),
        bridge: local(appPorts.bridgeMetrics, '/readyz'),
      };
      const env = appEnv(taskQueue, sdkMetrics, appPorts);
      for (const [app, name] of names) {
        startDaemon(benchDir, {
          name,
          command: process.execPath,
          args: [path.join(projectRoot, 'dist', 'src', 'bin', `${app}.js`)],
          env,
          cwd: projectRoot,
        });
      }
      try {
        for (const [app, name] of names) {
          const ready = async () => {
            if (daemonPid(benchDir, name) === undefined) throw new Error(`${name} exited (log: ${logFile(benchDir, name)})`);
            return (await fetch(readyUrl[app]).catch(() => undefined))?.status === 200;
          };
          await waitFor(`${name} (log: ${logFile(benchDir, name)})`, ready, 90_000);
        }
        if (apps.includes('worker') && !schedulePaused) {
          // Every worker ensures the maintenance Schedule; paused, it cannot fire inside a
          // measurement (its state survives the next worker's update of the schedule).
          await temporal.schedule.getHandle(maintenanceScheduleId).pause('benchmark: no maintenance runs inside measurements');
          schedulePaused = true;
        }
      } catch (error) {
        await Promise.all(names.map(([, name]) => stopDaemon(benchDir, name)));
        throw error;
      }
      return {
        apiUrl: local(appPorts.api, ''),
        workerMetricsUrl: local(appPorts.workerMetrics, '/metrics'),
        bridgeMetricsUrl: local(appPorts.bridgeMetrics, '/metrics'),
        workerSdkMetricsUrl: local(appPorts.workerSdkMetrics, '/metrics'),
        pid(app) {
          const entry = names.find(([a]) => a === app);
          const pid = entry === undefined ? undefined : daemonPid(benchDir, entry[1]);
          if (pid === undefined) throw new Error(`${label}-${app} is not running`);
          return pid;
        },
        async stop() {
          await Promise.all(names.map(([, name]) => stopDaemon(benchDir, name)));
        },
      };
    },
  };
}

/** Closes the benchmark's connections and stops every process and service under .dev/bench. */
export async function stopBenchStack(stack: BenchStack | undefined): Promise<void> {
  if (stack !== undefined) {
    await stack.nats.close().catch(() => undefined);
    await stack.temporal.connection.close().catch(() => undefined);
    await stack.pool.end().catch(() => undefined);
  }
  await stopEverything(benchDir, findBinaries({}).pgBin);
}

export interface Environment {
  readonly cores: number;
  readonly cpu: string;
  readonly memoryGiB: number;
  readonly os: string;
  readonly node: string;
  readonly temporalCli: string;
  readonly temporalSdk: string;
  readonly postgres: string;
  readonly nats: string;
}

export async function describeEnvironment(stack: BenchStack): Promise<Environment> {
  const firstLine = async (program: string, args: string[]) => (await run(program, args)).stdout.split('\n')[0]!.trim();
  const sdk = (
    JSON.parse(readFileSync(path.join(projectRoot, 'node_modules', '@temporalio', 'worker', 'package.json'), 'utf8')) as { version: string }
  ).version;
  const postgres = await stack.pool.oneFirst(sql.type(z.object({ server_version: z.string() }))`SHOW server_version`);
  return {
    cores: os.cpus().length,
    cpu: os.cpus()[0]?.model.trim() ?? 'unknown',
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    temporalCli: await firstLine(stack.binaries.temporal, ['--version']),
    temporalSdk: sdk,
    postgres: `PostgreSQL ${postgres}`,
    nats: `nats-server ${stack.nats.info?.version ?? (await firstLine(stack.binaries.natsServer, ['--version']))}`,
  };
}

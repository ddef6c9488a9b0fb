/**
 * The benchmark's private stack under .dev/bench: PostgreSQL, NATS JetStream and Temporal —
 * the CLI's dev server or the real server with mTLS (devstack/services.ts) — and the product's
 * own processes (dist/src/bin/{api,worker,bridge}.js) started as daemons with pid files — so
 * `stopEverything` stops them with the services, also after a failure, and the next run
 * cleans up whatever a killed run left. The processes' environment is assembled by the one
 * environment function (devstack/environment.ts), with the Temporal TLS files the engine needs;
 * the benchmark's own Temporal connections are read from that same environment.
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
import { createDatabasePool, type DatabasePool, maintenanceScheduleId, migrateUp, projectRoot, serviceMigrations } from '../src/testing.js';
import { daemonPid, logFile, startDaemon, stopDaemon, waitFor } from '../devstack/daemons.js';
import { assembleStackEnvironment } from '../devstack/environment.js';
import { freePort } from '../devstack/ports.js';
import { ensureDatabase, startBackingServices, stopEverything, type TemporalEngine } from '../devstack/services.js';
import { findBinaries, findTemporalServer, type Binaries } from '../devstack/tools.js';
import { removeCluster } from '../devstack/postgres.js';
import { benchTemporalConnection } from './temporal-connection.js';

const run = promisify(execFile);

export const benchDir = path.join(projectRoot, '.dev', 'bench');

/**
 * Every listening port of the stack and its apps is a free one below the ephemeral range
 * (devstack/ports.ts): a fixed port in that range can be taken by any client socket of the
 * busy benchmark (its pools, its HTTP clients) just before a daemon binds it.
 */
const freePorts = async <K extends string>(names: readonly K[]): Promise<Record<K, number>> => {
  const ports = {} as Record<K, number>;
  for (const name of names) ports[name] = await freePort();
  return ports;
};

export type AppName = 'api' | 'worker' | 'bridge';

interface AppPorts {
  readonly api: number;
  readonly workerMetrics: number;
  readonly bridgeMetrics: number;
  readonly workerSdkMetrics: number;
}

export type { TemporalEngine } from '../devstack/services.js';

export interface BenchStack {
  readonly dir: string;
  readonly binaries: Binaries;
  /** Which Temporal the stack runs. */
  readonly engine: TemporalEngine;
  readonly databaseUrl: string;
  readonly natsUrl: string;
  readonly temporalAddress: string;
  /**
   * The Temporal variables the product's processes get (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE,
   * and the TEMPORAL_TLS_* files on the real server): helper processes connect with these too,
   * through `benchTemporalConnection` (bench/temporal-connection.ts).
   */
  readonly temporalEnv: Readonly<Record<string, string>>;
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
    /** Variables set on top of the stack's (a setting the measurement compares). */
    readonly env?: Readonly<Record<string, string>>;
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

/**
 * Starts the services (after stopping whatever a killed earlier run left) and migrates a fresh
 * database. `temporal`: the dev server (default) or the real server (PostgreSQL, mTLS).
 */
export async function startBenchStack(options: { readonly temporal?: TemporalEngine } = {}): Promise<BenchStack> {
  const engine = options.temporal ?? 'dev-server';
  const binaries = findBinaries({});
  await stopEverything(benchDir, binaries.pgBin);
  removeCluster(benchDir);
  rmSync(benchDir, { recursive: true, force: true });
  const ports = await freePorts(['postgres', 'nats', 'temporal'] as const);
  const services = await startBackingServices({ dir: benchDir, binaries, ports: { ...ports, temporalUi: undefined }, fast: false, temporal: engine });
  await ensureDatabase(services.postgres.url('postgres'), 'bench');
  const databaseUrl = services.postgres.url('bench');
  await migrateUp(databaseUrl, serviceMigrations({ withHostStandIn: true }));
  const pool = await createDatabasePool(databaseUrl, { maximumPoolSize: 20, statementTimeoutMs: 300_000 });
  const jwtSecret = randomBytes(32).toString('base64url');
  // The processes' variables, through the one environment function; nothing of the caller's
  // environment is inherited (the stack is private and its figures must not depend on a shell).
  const { env: stackEnv } = assembleStackEnvironment(
    {},
    {
      env: {
        DATABASE_URL: databaseUrl,
        NATS_URL: services.natsUrl,
        TEMPORAL_ADDRESS: services.temporalAddress,
        // The real server wants our client certificate: its TEMPORAL_TLS_* files.
        ...services.temporalEnv,
        TEMPORAL_NAMESPACE: 'default',
        HOST: '127.0.0.1',
        JWT_SECRET: jwtSecret,
        // The fake distributor listens on loopback over plain HTTP.
        PUSH_UP_ALLOW_PRIVATE: 'true',
        PUSH_UP_ALLOW_HTTP: 'true',
        // The design's intervals, as in production.
        PUSH_MIN_INTERVAL_MS: '15000',
        PUSH_REWAKE_AFTER_MS: '900000',
        LOG_LEVEL: 'info',
      },
      fcmStandIn: {},
    },
  );
  const temporalEnv = Object.fromEntries(Object.entries(stackEnv).filter(([name]) => name.startsWith('TEMPORAL_')));
  const connection = await Connection.connect(benchTemporalConnection(temporalEnv));
  const temporal = new Client({ connection, namespace: 'default' });
  const nats = await connect({ servers: services.natsUrl, name: 'bench' });
  let schedulePaused = false;

  const appEnv = (taskQueue: string, sdkMetrics: boolean, appPorts: AppPorts): Record<string, string> => ({
    PATH: '/usr/local/bin:/usr/bin:/bin',
    ...stackEnv,
    TEMPORAL_TASK_QUEUE: taskQueue,
    PORT: String(appPorts.api),
    WORKER_METRICS_PORT: String(appPorts.workerMetrics),
    BRIDGE_METRICS_PORT: String(appPorts.bridgeMetrics),
    WORKER_SDK_METRICS_PORT: sdkMetrics ? String(appPorts.workerSdkMetrics) : '0',
  });

  return {
    dir: benchDir,
    binaries,
    engine,
    databaseUrl,
    natsUrl: services.natsUrl,
    temporalAddress: services.temporalAddress,
    temporalEnv,
    pool,
    temporal,
    nats,
    jwtSecret,
    async startApps({ label, taskQueue, apps, sdkMetrics = false, env: extra = {} }) {
      const names = apps.map((app) => [app, `${label}-${app}`] as const);
      const appPorts: AppPorts = await freePorts(['api', 'workerMetrics', 'bridgeMetrics', 'workerSdkMetrics'] as const);
      const local = (port: number, path: string) => `http://127.0.0.1:${port}${path}`;
      const readyUrl: Record<AppName, string> = {
        api: local(appPorts.api, '/readyz'),
        worker: local(appPorts.workerMetrics, '/readyz'),
        bridge: local(appPorts.bridgeMetrics, '/readyz'),
      };
      const env = { ...appEnv(taskQueue, sdkMetrics, appPorts), ...extra };
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
  /** The real server's version (`temporal-server --version`), or why it is not there. */
  readonly temporalServer: string;
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
    temporalServer: await Promise.resolve()
      .then(() => firstLine(findTemporalServer().server, ['--version']))
      .catch(() => 'not installed (tools/go-tools.sh)'),
    temporalSdk: sdk,
    postgres: `PostgreSQL ${postgres}`,
    nats: `nats-server ${stack.nats.info?.version ?? (await firstLine(stack.binaries.natsServer, ['--version']))}`,
  };
}

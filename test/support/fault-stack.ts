/**
 * A private stack for the faults tier, one per test file: PostgreSQL, NATS with JetStream and
 * the Temporal dev server under `.dev/test-faults-<pid>` on free ports — never the services the
 * integration tier shares — plus the built api, worker and bridge as detached daemons (pid
 * files under the same directory), so that
 *
 *   - `kill(name)` is a real SIGKILL of a real process, and `start(name)` brings it back on
 *     the same port with the same environment;
 *   - `restartService(name)` stops a backing service and starts it again with the same data
 *     directory and port, as an operator's restart would;
 *   - `close()` stops everything and removes the directory, and a run killed before its
 *     `close()` is cleaned up by the next one (test/support/stale-runs.ts: the directory
 *     names a pid that is no longer alive; the apps are daemons with pid files there too).
 *
 *   const stack = await startFaultStack({ apps: { api: 2, worker: 2, bridge: 2 }, env: {...} });
 *   stack.kill('worker-1'); await stack.start('worker-1');
 *   stack.useRelease(root); await stack.stop('worker-1'); await stack.start('worker-1');
 *   await stack.restartService('postgres');
 *   await stack.close();
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { migrateUp } from '../../src/db/migrate.js';
import { serviceMigrations } from '../../src/db/migrations.js';
import { assembleStackEnvironment } from '../../devstack/environment.js';
import { daemonPid, isAlive, logFile, startDaemon, stopDaemon, waitFor } from '../../devstack/daemons.js';
import { natsDaemon, startNats } from '../../devstack/nats.js';
import { startPostgres, stopPostgres, removeCluster } from '../../devstack/postgres.js';
import { ensureDatabase, startBackingServices, stopEverything, type BackingServices, type TemporalEngine } from '../../devstack/services.js';
import { startTemporalDevServer, temporalDaemon } from '../../devstack/temporal.js';
import { startTemporalServer, temporalServerDaemon } from '../../devstack/temporal-server.js';
import { findBinaries, findTemporalServer, type Binaries } from '../../devstack/tools.js';
import { projectRoot } from '../../src/process/paths.js';
import { testJwtSecret } from './jwt.js';
import { freePort } from '../../devstack/ports.js';
import { cleanStaleTestRuns } from './stale-runs.js';

export type AppKind = 'api' | 'worker' | 'bridge';
export type BackingService = 'postgres' | 'nats' | 'temporal';

export interface AppProcess {
  /** `api-1`, `worker-2`, … : the daemon name. */
  readonly name: string;
  readonly kind: AppKind;
  /** Where `/readyz` answers (the api's own port, or the ops port of worker and bridge). */
  readonly url: string;
}

export interface FaultStackOptions {
  /** Replicas of each process. */
  readonly apps: Readonly<Record<AppKind, number>>;
  /** Service variables of every app (PUSH_*, LOG_LEVEL…): they win over the stack's. */
  readonly env?: Readonly<Record<string, string>>;
  /** The dev server (default), or the real Temporal server with mTLS (the cluster tier). */
  readonly temporal?: TemporalEngine;
  /** Directory name under .dev (default `test-faults-<pid>`). */
  readonly name?: string;
  /**
   * The tree whose build runs the apps and applies the migrations (default this one): the
   * upgrade tier starts a previous release's (test/support/previous-versions.ts), then
   * `useRelease(projectRoot)` and restarts them one by one.
   */
  readonly release?: string;
}

export interface FaultStack {
  readonly dir: string;
  readonly databaseUrl: string;
  readonly natsUrl: string;
  readonly temporalAddress: string;
  /** SDK connection options for clients in the test process (TLS for the real server). */
  readonly temporalConnection: BackingServices['temporalConnection'];
  readonly taskQueue: string;
  readonly apps: readonly AppProcess[];
  appsOf(kind: AppKind): readonly AppProcess[];
  /** SIGKILL: no handler runs, nothing is flushed. Returns once the process is gone. */
  kill(name: string): Promise<void>;
  /** SIGTERM, as a rolling deploy stops a pod: the app drains and exits. Returns once it is gone. */
  stop(name: string): Promise<void>;
  /** The tree whose build later `start`s run (the release being rolled out). */
  useRelease(root: string): void;
  /** Starts the app again (same port, same environment) and waits until it is ready. */
  start(name: string): Promise<void>;
  isRunning(name: string): boolean;
  waitReady(name: string, timeoutMs?: number): Promise<void>;
  stopService(service: BackingService): Promise<void>;
  /** SIGKILL of a service's process (Temporal or NATS): nothing is flushed. Returns once it is gone. */
  killService(service: Exclude<BackingService, 'postgres'>): Promise<void>;
  startService(service: BackingService): Promise<void>;
  /** The tail of an app's or a service's log, for failure messages. */
  logTail(name: string, lines?: number): string;
  close(): Promise<void>;
}

const database = 'push_faults';

export async function startFaultStack(options: FaultStackOptions): Promise<FaultStack> {
  const dir = path.join(projectRoot, '.dev', `${options.name ?? 'test-faults'}-${process.pid}`);
  const engine = options.temporal ?? 'dev-server';
  const binaries = findBinaries({});
  await cleanStaleTestRuns(binaries.pgBin);
  const close = async () => {
    await stopEverything(dir, binaries.pgBin);
    // FAULTS_KEEP_DIR=1 keeps the logs and data for a look after the run (everything is stopped).
    if (process.env.FAULTS_KEEP_DIR !== '1') {
      removeCluster(dir);
      rmSync(dir, { recursive: true, force: true });
    }
  };
  try {
    const ports = { postgres: await freePort(), nats: await freePort(), temporal: await freePort(), temporalUi: undefined };
    const services = await startBackingServices({ dir, binaries, ports, fast: true, temporal: engine });
    await ensureDatabase(services.postgres.url('postgres'), database);
    const databaseUrl = services.postgres.url(database);
    let release = options.release ?? projectRoot;
    if (release === projectRoot) await migrateUp(databaseUrl, serviceMigrations({ withHostStandIn: true }));
    else await runMigrate(release, databaseUrl);
    const taskQueue = `faults-${process.pid}`;
    const apps: AppProcess[] = [];
    const env = new Map<string, Record<string, string>>();
    for (const kind of ['api', 'worker', 'bridge'] as const) {
      for (let i = 1; i <= options.apps[kind]; i++) {
        const port = await freePort();
        const name = `${kind}-${i}`;
        const portVariable = { api: 'PORT', worker: 'WORKER_METRICS_PORT', bridge: 'BRIDGE_METRICS_PORT' }[kind];
        // The dev stack's rule (devstack/environment.ts): the caller's settings win, the stack's fill the rest.
        const inForce = assembleStackEnvironment(options.env ?? {}, {
          env: {
            // Names the process in pg_stat_activity (and lets the faults tier tell which worker claimed).
            DATABASE_URL: `${databaseUrl}?application_name=${name}`,
            NATS_URL: services.natsUrl,
            TEMPORAL_ADDRESS: services.temporalAddress,
            ...services.temporalEnv,
            TEMPORAL_TASK_QUEUE: taskQueue,
            JWT_SECRET: testJwtSecret,
            HOST: '127.0.0.1',
            WORKER_SDK_METRICS_PORT: '0',
          },
          fcmStandIn: {},
        });
        env.set(name, { PATH: '/usr/local/bin:/usr/bin:/bin', ...inForce.env, [portVariable]: String(port) });
        apps.push({ name, kind, url: `http://127.0.0.1:${port}` });
      }
    }
    const app = (name: string) => {
      const found = apps.find((a) => a.name === name);
      if (found === undefined) throw new Error(`no app ${name}`);
      return found;
    };
    const launch = (name: string) =>
      startDaemon(dir, {
        name,
        command: process.execPath,
        args: [path.join(release, 'dist', 'src', 'bin', `${app(name).kind}.js`)],
        env: env.get(name)!,
        cwd: release,
      });
    const waitReady = async (name: string, timeoutMs = 60_000) => {
      const { url } = app(name);
      await waitFor(
        `${name} ready at ${url}/readyz`,
        async () => {
          if (daemonPid(dir, name) === undefined) throw new Error(`${name} exited:\n${tail(logFile(dir, name), 20)}`);
          return (await fetch(`${url}/readyz`).catch(() => undefined))?.status === 200;
        },
        timeoutMs,
      );
    };
    for (const { name } of apps) launch(name);
    for (const { name } of apps) await waitReady(name);

    return {
      dir,
      databaseUrl,
      natsUrl: services.natsUrl,
      temporalAddress: services.temporalAddress,
      temporalConnection: services.temporalConnection,
      taskQueue,
      apps,
      appsOf: (kind) => apps.filter((a) => a.kind === kind),
      async kill(name) {
        const pid = daemonPid(dir, name);
        if (pid === undefined) throw new Error(`${name} is not running`);
        process.kill(pid, 'SIGKILL');
        await waitFor(`${name} (pid ${pid}) gone after SIGKILL`, async () => !isAlive(pid), 10_000);
      },
      async start(name) {
        launch(name);
        await waitReady(name);
      },
      async stop(name) {
        if (!(await stopDaemon(dir, name, 35_000))) throw new Error(`${name} is not running`);
      },
      useRelease(root) {
        release = root;
      },
      isRunning: (name) => daemonPid(dir, name) !== undefined,
      waitReady,
      async stopService(service) {
        if (service === 'postgres') await stopPostgres(binaries.pgBin, dir);
        else await stopDaemon(dir, service === 'nats' ? natsDaemon : engine === 'server' ? temporalServerDaemon : temporalDaemon);
      },
      async killService(service) {
        const daemon = service === 'nats' ? natsDaemon : engine === 'server' ? temporalServerDaemon : temporalDaemon;
        const pid = daemonPid(dir, daemon);
        if (pid === undefined) throw new Error(`${daemon} is not running`);
        process.kill(pid, 'SIGKILL');
        await waitFor(`${daemon} (pid ${pid}) gone after SIGKILL`, async () => !isAlive(pid), 10_000);
      },
      startService: (service) => startService(service, { dir, binaries, ports, engine }),
      logTail: (name, lines = 40) => tail(name === 'postgres' ? path.join(dir, 'postgres', 'postgres.log') : logFile(dir, name), lines),
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

async function startService(
  service: BackingService,
  {
    dir,
    binaries,
    ports,
    engine,
  }: { dir: string; binaries: Binaries; ports: { postgres: number; nats: number; temporal: number }; engine: TemporalEngine },
): Promise<void> {
  // The same data directory and port: what was durable before the stop is there again.
  if (service === 'postgres') await startPostgres({ pgBin: binaries.pgBin, dir, port: ports.postgres, fast: true });
  else if (service === 'nats') await startNats({ natsServer: binaries.natsServer, dir, port: ports.nats });
  else if (engine === 'server') {
    await startTemporalServer({
      binaries: findTemporalServer(),
      dir,
      postgres: { host: '127.0.0.1', port: ports.postgres, user: 'postgres' },
      port: ports.temporal,
    });
  } else await startTemporalDevServer({ temporal: binaries.temporal, dir, port: ports.temporal, uiPort: undefined });
}

/** A release's own `migrate up` (with the host stand-in), as its deployment ran it. */
async function runMigrate(release: string, databaseUrl: string): Promise<void> {
  const child = spawn(process.execPath, [path.join(release, 'dist', 'src', 'bin', 'migrate.js'), 'up', '--host-standin'], {
    env: { PATH: '/usr/local/bin:/usr/bin:/bin', DATABASE_URL: databaseUrl },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  if (code !== 0) throw new Error(`migrate of ${release} exited ${code}: ${output}`);
}

function tail(file: string, lines: number): string {
  if (!existsSync(file)) return `(no ${path.basename(file)})`;
  return readFileSync(file, 'utf8')
    .split('\n')
    .slice(-lines - 1)
    .join('\n');
}

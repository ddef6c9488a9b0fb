/**
 * The development stack: `stack up` (everything in the background, returns once ready),
 * `stack dev` (the same, then the live demonstration, then logs until Ctrl-C stops it all),
 * `stack down` (stops everything this stack started). Driven by the Makefile.
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { createReadStream, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadDevStackConfig, type DevStackConfig } from '../config/dev.js';
import { migrateUp } from '../db/migrate.js';
import { serviceMigrations } from '../db/migrations.js';
import { createDatabasePool } from '../db/pool.js';
import { sql } from 'slonik';
import { assembleStackEnvironment, describeStackEnvironment, type StackEnvironment } from './environment.js';
import { projectRoot } from '../paths.js';
import { logFile, startDaemon, stopDaemon, waitFor } from './daemons.js';
import { ensureDatabase, startBackingServices, stopEverything } from './services.js';
import { createServiceAccount, serviceAccountFromKeyFile } from './stand-ins/google-oauth.js';
import { findBinaries } from './tools.js';

const databaseName = 'zippchat';
const apps = ['api', 'worker', 'bridge'] as const;
/** The local FCM (Google OAuth + FCM HTTP v1 + simulated phones' inbox): see stand-ins/local-fcm.ts. */
const fcmStandIn = 'fcm-stand-in';
const fcmProjectId = 'zippchat-dev';

export interface StackInfo {
  /** What `.dev/env` exports: API_URL and the service variables in force. */
  readonly env: Readonly<Record<string, string>>;
  /** The service variables in force, and where each came from. */
  readonly environment: StackEnvironment;
  readonly urls: {
    readonly api: string;
    readonly temporalUi: string;
    /** Undefined when the caller's FCM settings are in force instead. */
    readonly fcmStandIn: string | undefined;
    readonly workerMetrics: string;
    readonly workerSdkMetrics: string;
    readonly bridgeMetrics: string;
  };
  /** Where the stack keeps its files (`.dev` unless DEV_DIR says otherwise). */
  readonly dir: string;
}

export async function up(config: DevStackConfig): Promise<StackInfo> {
  const binaries = findBinaries(config.binaries);
  mkdirSync(config.dir, { recursive: true });
  const services = await startBackingServices({
    dir: config.dir,
    binaries,
    ports: { postgres: config.ports.postgres, nats: config.ports.nats, temporal: config.ports.temporal, temporalUi: config.ports.temporalUi },
    temporal: config.temporal,
  });
  await ensureDatabase(services.postgres.url('postgres'), databaseName);
  const fcm = fcmStandInSettings(config);
  // The caller's environment wins; the stack's defaults fill only what is unset (contract §2).
  const environment = assembleStackEnvironment(config.inherited, {
    env: {
      DATABASE_URL: services.postgres.url(databaseName),
      NATS_URL: services.natsUrl,
      TEMPORAL_ADDRESS: services.temporalAddress,
      // The real server (DEV_TEMPORAL=server) wants our client certificate: its TEMPORAL_TLS_* files.
      ...services.temporalEnv,
      TEMPORAL_NAMESPACE: 'default',
      TEMPORAL_TASK_QUEUE: 'push-wakes',
      TEMPORAL_UI_URL: services.temporalUiUrl ?? '',
      HOST: '127.0.0.1',
      PORT: String(config.ports.api),
      WORKER_METRICS_PORT: String(config.ports.workerMetrics),
      BRIDGE_METRICS_PORT: String(config.ports.bridgeMetrics),
      WORKER_SDK_METRICS_PORT: String(config.ports.workerSdkMetrics),
      JWT_SECRET: devJwtSecret(config.dir),
      // The demo's distributor and FCM stand-in listen on loopback over plain HTTP.
      PUSH_UP_ALLOW_PRIVATE: 'true',
      PUSH_UP_ALLOW_HTTP: 'true',
      // The design's intervals.
      PUSH_MIN_INTERVAL_MS: '15000',
      PUSH_REWAKE_AFTER_MS: '900000',
      LOG_LEVEL: 'info',
    },
    fcmStandIn: fcm.env,
  });
  const inForce = environment.env;
  await migrateDatabaseInForce(inForce);
  if (environment.fcmStandIn) await startFcmStandIn(config, fcm.url);
  const host = inForce.HOST ?? '127.0.0.1';
  const apiUrl = localUrl(host, inForce.PORT ?? '8080');
  const env: Record<string, string> = { API_URL: apiUrl, ...inForce };
  writeEnvFile(config.dir, env);
  for (const app of apps) {
    await stopDaemon(config.dir, app); // a new build replaces the running one
    startDaemon(config.dir, {
      name: app,
      command: process.execPath,
      args: [path.join(projectRoot, 'dist', 'src', 'bin', `${app}.js`)],
      env: { ...config.inherited, ...inForce },
      cwd: projectRoot,
    });
  }
  const ready = async (url: string) => (await fetch(url).catch(() => undefined))?.status === 200;
  for (const [name, url] of [
    ['api', `${apiUrl}/readyz`],
    ['worker', `${localUrl(host, inForce.WORKER_METRICS_PORT ?? '9464')}/readyz`],
    ['bridge', `${localUrl(host, inForce.BRIDGE_METRICS_PORT ?? '9465')}/readyz`],
  ] as const) {
    await waitFor(`${name} at ${url} (log: ${logFile(config.dir, name)})`, () => ready(url), 90_000);
  }
  return {
    env,
    environment,
    dir: config.dir,
    urls: {
      api: apiUrl,
      temporalUi: inForce.TEMPORAL_UI_URL ?? '',
      fcmStandIn: environment.fcmStandIn ? fcm.url : undefined,
      workerMetrics: localUrl(host, inForce.WORKER_METRICS_PORT ?? '9464'),
      workerSdkMetrics: localUrl(host, inForce.WORKER_SDK_METRICS_PORT ?? '9466'),
      bridgeMetrics: localUrl(host, inForce.BRIDGE_METRICS_PORT ?? '9465'),
    },
  };
}

/** A URL for reaching a listener on `host` from this machine (a wildcard address means loopback). */
function localUrl(host: string, port: string): string {
  const reachable = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return `http://${reachable.includes(':') ? `[${reachable}]` : reachable}:${port}`;
}

/**
 * Migrates the database in force: the stack's own gets the host stand-in too; a database the
 * caller named gets it only if it has no host tables (a real host database keeps its own).
 */
async function migrateDatabaseInForce(env: Readonly<Record<string, string>>): Promise<void> {
  const url = env.DATABASE_URL ?? (env.DATABASE_URL_FILE === undefined ? undefined : readFileSync(env.DATABASE_URL_FILE, 'utf8').trim());
  if (url === undefined) throw new Error('no DATABASE_URL in force');
  const pool = await createDatabasePool(url, { maximumPoolSize: 1 });
  let hasHostTables: boolean;
  try {
    hasHostTables = await pool.oneFirst(sql.type(z.object({ present: z.boolean() }))`SELECT to_regclass('users') IS NOT NULL AS present`);
  } finally {
    await pool.end();
  }
  await migrateUp(url, serviceMigrations({ withHostStandIn: !hasHostTables }));
}

/**
 * The local FCM stand-in's settings: a service account generated once for this stack, whose
 * token URL is the stand-in's. Kept across `make up` (the registration tokens it minted live
 * in its memory).
 */
function fcmStandInSettings(config: DevStackConfig): { url: string; env: Record<string, string> } {
  const keyFile = path.join(config.dir, 'fcm-service-account.json');
  if (!existsSync(keyFile)) writeFileSync(keyFile, createServiceAccount(fcmProjectId).keyFile(''), { mode: 0o600 });
  const url = `http://127.0.0.1:${config.ports.fcm}`;
  const account = serviceAccountFromKeyFile(readFileSync(keyFile, 'utf8'));
  return { url, env: { FCM_PROJECT_ID: fcmProjectId, FCM_CREDENTIALS_JSON: account.keyFile(`${url}/token`), FCM_ENDPOINT: url } };
}

/** Starts the local FCM stand-in (OAuth token endpoint, FCM HTTP v1, simulated phones' inbox). */
async function startFcmStandIn(config: DevStackConfig, url: string): Promise<void> {
  startDaemon(config.dir, {
    name: fcmStandIn,
    command: process.execPath,
    args: [path.join(projectRoot, 'dist', 'src', 'dev', 'stand-ins', 'main.js'), '--port', String(config.ports.fcm), '--key-file', path.join(config.dir, 'fcm-service-account.json')],
    cwd: projectRoot,
  });
  const answers = async () => (await fetch(`${url}/_device/wakes`, { method: 'GET' }).catch(() => undefined))?.status === 405;
  await waitFor(`the local FCM stand-in at ${url} (log: ${logFile(config.dir, fcmStandIn)})`, answers, 30_000);
}

export async function down(config: DevStackConfig): Promise<string[]> {
  return stopEverything(config.dir, findBinaries(config.binaries).pgBin);
}

function devJwtSecret(dir: string): string {
  const file = path.join(dir, 'jwt-secret');
  if (!existsSync(file)) writeFileSync(file, randomBytes(32).toString('base64url'), { mode: 0o600 });
  return readFileSync(file, 'utf8').trim();
}

function writeEnvFile(dir: string, env: Readonly<Record<string, string>>): void {
  const quote = (v: string) => `'${v.replace(/'/g, `'\\''`)}'`;
  const lines = Object.entries(env).map(([k, v]) => `export ${k}=${quote(v)}`);
  writeFileSync(path.join(dir, 'env'), `# Written by make up / make dev. Source it: . .dev/env\n${lines.join('\n')}\n`, { mode: 0o600 });
}

function printSummary(config: DevStackConfig, info: StackInfo): void {
  const logs = path.relative(projectRoot, path.join(config.dir, 'logs'));
  process.stdout.write(
    [
      '',
      'zippchat-push is running',
      `  API              ${info.urls.api}   (health: /healthz, readiness: /readyz, metrics: /metrics)`,
      info.urls.temporalUi === ''
        ? '  Temporal         the real server (DEV_TEMPORAL=server, mTLS): no Web UI here; `temporal` CLI with the TEMPORAL_TLS_* files of the environment'
        : `  Temporal Web UI  ${info.urls.temporalUi}/namespaces/default/workflows`,
      `  metrics          worker ${info.urls.workerMetrics}/metrics, Temporal SDK ${info.urls.workerSdkMetrics}/metrics, bridge ${info.urls.bridgeMetrics}/metrics`,
      info.urls.fcmStandIn === undefined
        ? `  FCM              your settings (FCM_PROJECT_ID${info.environment.env.FCM_ENDPOINT === undefined ? '' : ', FCM_ENDPOINT'}); the local FCM stand-in is not started`
        : `  local FCM        ${info.urls.fcmStandIn}   (stand-in for Google OAuth + FCM HTTP v1; simulated phones fetch their wakes here)`,
      `  environment      . ${path.relative(projectRoot, path.join(config.dir, 'env'))}`,
      `  logs             ${logs}/{api,worker,bridge,${fcmStandIn},temporal,nats-server}.log`,
      '',
      'In force (yours: set in the environment of make; the rest: the stack\'s defaults):',
      ...describeStackEnvironment(info.environment).map((line) => `  ${line}`),
      '',
    ].join('\n') + '\n',
  );
}

/** Follows the app logs on stdout until the process is told to stop. */
function followLogs(config: DevStackConfig): () => void {
  const followed = [...apps, fcmStandIn];
  const offsets = new Map<string, number>();
  for (const app of followed) offsets.set(app, existsSync(logFile(config.dir, app)) ? statSync(logFile(config.dir, app)).size : 0);
  const timer = setInterval(() => {
    for (const app of followed) {
      const file = logFile(config.dir, app);
      const size = existsSync(file) ? statSync(file).size : 0;
      const from = offsets.get(app) ?? 0;
      if (size <= from) continue;
      offsets.set(app, size);
      createReadStream(file, { start: from, end: size - 1 }).pipe(process.stdout, { end: false });
    }
  }, 500);
  return () => clearInterval(timer);
}

async function main(command: string | undefined): Promise<void> {
  const config = loadDevStackConfig(projectRoot);
  if (command === 'up') {
    printSummary(config, await up(config));
    return;
  }
  if (command === 'down') {
    const stopped = await down(config);
    process.stdout.write(`stopped: ${stopped.length === 0 ? 'nothing was running' : [...stopped, 'postgres'].join(', ')}\n`);
    return;
  }
  if (command === 'dev') {
    let stopping = false;
    const stopAll = async () => {
      if (stopping) return;
      stopping = true;
      process.stdout.write('\nstopping…\n');
      await down(config);
      process.exit(0);
    };
    process.on('SIGINT', () => void stopAll());
    process.on('SIGTERM', () => void stopAll());
    const info = await up(config);
    printSummary(config, info);
    const { runDemo } = await import('./demo.js');
    await runDemo(info);
    process.stdout.write('Serving until Ctrl-C. App logs follow.\n');
    followLogs(config);
    return;
  }
  throw new Error('usage: stack up | dev | down');
}

main(process.argv[2]).catch((error: unknown) => {
  process.stderr.write(`stack: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});

/**
 * The development stack as a library: `up` starts PostgreSQL, NATS, Temporal, the local FCM
 * stand-in and the built api, worker and bridge under the stack's directory and returns once
 * each is ready; `down` stops everything it started. The command line is cli.ts.
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { DevStackConfig } from './config.js';
import { migrateUp } from '../src/db/migrate.js';
import { serviceMigrations } from '../src/db/migrations.js';
import { createDatabasePool } from '../src/db/pool.js';
import { sql } from 'slonik';
import { assembleStackEnvironment, type StackEnvironment } from './environment.js';
import { projectRoot } from '../src/process/paths.js';
import { logFile, logSize, startDaemon, stopDaemon, waitFor, waitUntilReady, type Starting } from './daemons.js';
import { ensureDatabase, startBackingServices, stopEverything } from './services.js';
import { createServiceAccount, serviceAccountFromKeyFile } from './stand-ins/google-oauth.js';
import { findBinaries } from './tools.js';

const databaseName = 'zippchat';
export const apps = ['api', 'worker', 'bridge'] as const;
/** The local FCM (Google OAuth + FCM HTTP v1 + simulated phones' inbox): see stand-ins/local-fcm.ts. */
export const fcmStandIn = 'fcm-stand-in';
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
  // The caller's environment wins; the stack's defaults fill only what is unset (docs/design.md, Local stack).
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
  const readyz = {
    api: `${apiUrl}/readyz`,
    worker: `${localUrl(host, inForce.WORKER_METRICS_PORT ?? '9464')}/readyz`,
    bridge: `${localUrl(host, inForce.BRIDGE_METRICS_PORT ?? '9465')}/readyz`,
  };
  const starting: Starting[] = [];
  for (const app of apps) {
    await stopDaemon(config.dir, app); // a new build replaces the running one
    const logFrom = logSize(config.dir, app);
    const pid = startDaemon(config.dir, {
      name: app,
      command: process.execPath,
      args: [path.join(projectRoot, 'dist', 'src', 'bin', `${app}.js`)],
      env: { ...config.inherited, ...inForce },
      cwd: projectRoot,
    });
    const url = readyz[app];
    starting.push({
      name: app,
      pid,
      logFrom,
      what: `${app} at ${url} (log: ${logFile(config.dir, app)})`,
      ready: async () => (await fetch(url, { signal: AbortSignal.timeout(5_000) }).catch(() => undefined))?.status === 200,
    });
  }
  await waitUntilReady(config.dir, starting, 90_000);
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
    args: [
      path.join(projectRoot, 'dist-tools', 'devstack', 'stand-ins', 'main.js'),
      '--port',
      String(config.ports.fcm),
      '--key-file',
      path.join(config.dir, 'fcm-service-account.json'),
    ],
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

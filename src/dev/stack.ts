/**
 * The development stack: `stack up` (everything in the background, returns once ready),
 * `stack dev` (the same, then the live demonstration, then logs until Ctrl-C stops it all),
 * `stack down` (stops everything this stack started). Driven by the Makefile.
 */
import { randomBytes } from 'node:crypto';
import { createReadStream, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadDevStackConfig, type DevStackConfig } from '../config/dev.js';
import { migrateUp } from '../db/migrate.js';
import { serviceMigrations } from '../db/migrations.js';
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
  readonly env: Readonly<Record<string, string>>;
  readonly urls: {
    readonly api: string;
    readonly temporalUi: string;
    readonly fcmStandIn: string;
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
  });
  await ensureDatabase(services.postgres.url('postgres'), databaseName);
  const databaseUrl = services.postgres.url(databaseName);
  await migrateUp(databaseUrl, serviceMigrations({ withHostStandIn: true }));
  const fcm = await startFcmStandIn(config);
  const apiUrl = `http://127.0.0.1:${config.ports.api}`;
  const env: Record<string, string> = {
    API_URL: apiUrl,
    DATABASE_URL: databaseUrl,
    NATS_URL: services.natsUrl,
    TEMPORAL_ADDRESS: services.temporalAddress,
    TEMPORAL_NAMESPACE: 'default',
    TEMPORAL_TASK_QUEUE: 'push-wakes',
    TEMPORAL_UI_URL: services.temporalUiUrl ?? '',
    HOST: '127.0.0.1',
    PORT: String(config.ports.api),
    WORKER_METRICS_PORT: String(config.ports.workerMetrics),
    BRIDGE_METRICS_PORT: String(config.ports.bridgeMetrics),
    WORKER_SDK_METRICS_PORT: String(config.ports.workerSdkMetrics),
    JWT_SECRET: devJwtSecret(config.dir),
    // FCM against the local stand-in, with a service account generated once for this stack.
    FCM_PROJECT_ID: fcmProjectId,
    FCM_CREDENTIALS_JSON: fcm.credentialsJson,
    FCM_ENDPOINT: fcm.url,
    // The demo's distributor and FCM stand-in listen on loopback over plain HTTP.
    PUSH_UP_ALLOW_PRIVATE: 'true',
    PUSH_UP_ALLOW_HTTP: 'true',
    PUSH_MIN_INTERVAL_MS: '15000',
    PUSH_REWAKE_AFTER_MS: '900000',
    LOG_LEVEL: 'info',
  };
  writeEnvFile(config.dir, env);
  for (const app of apps) {
    await stopDaemon(config.dir, app); // a new build replaces the running one
    startDaemon(config.dir, {
      name: app,
      command: process.execPath,
      args: [path.join(projectRoot, 'dist', 'src', 'bin', `${app}.js`)],
      // eslint-disable-next-line no-restricted-syntax -- the children inherit PATH etc.
      env: { ...process.env, ...env },
      cwd: projectRoot,
    });
  }
  const ready = async (url: string) => (await fetch(url).catch(() => undefined))?.status === 200;
  for (const [name, url] of [
    ['api', `${apiUrl}/readyz`],
    ['worker', `http://127.0.0.1:${config.ports.workerMetrics}/readyz`],
    ['bridge', `http://127.0.0.1:${config.ports.bridgeMetrics}/readyz`],
  ] as const) {
    await waitFor(`${name} at ${url} (log: ${logFile(config.dir, name)})`, () => ready(url), 90_000);
  }
  const local = (port: number) => `http://127.0.0.1:${port}`;
  return {
    env,
    dir: config.dir,
    urls: {
      api: apiUrl,
      temporalUi: services.temporalUiUrl ?? '',
      fcmStandIn: fcm.url,
      workerMetrics: local(config.ports.workerMetrics),
      workerSdkMetrics: local(config.ports.workerSdkMetrics),
      bridgeMetrics: local(config.ports.bridgeMetrics),
    },
  };
}

/**
 * Starts the local FCM stand-in (kept running across `make up`: the registration tokens it
 * minted live in its memory) and returns the FCM_CREDENTIALS_JSON that points at it.
 */
async function startFcmStandIn(config: DevStackConfig): Promise<{ url: string; credentialsJson: string }> {
  const keyFile = path.join(config.dir, 'fcm-service-account.json');
  if (!existsSync(keyFile)) writeFileSync(keyFile, createServiceAccount(fcmProjectId).keyFile(''), { mode: 0o600 });
  const url = `http://127.0.0.1:${config.ports.fcm}`;
  startDaemon(config.dir, {
    name: fcmStandIn,
    command: process.execPath,
    args: [path.join(projectRoot, 'dist', 'src', 'dev', 'stand-ins', 'main.js'), '--port', String(config.ports.fcm), '--key-file', keyFile],
    cwd: projectRoot,
  });
  const answers = async () => (await fetch(`${url}/_device/wakes`, { method: 'GET' }).catch(() => undefined))?.status === 405;
  await waitFor(`the local FCM stand-in at ${url} (log: ${logFile(config.dir, fcmStandIn)})`, answers, 30_000);
  const account = serviceAccountFromKeyFile(readFileSync(keyFile, 'utf8'));
  return { url, credentialsJson: account.keyFile(`${url}/token`) };
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
      `  Temporal Web UI  ${info.urls.temporalUi}/namespaces/default/workflows`,
      `  metrics          worker ${info.urls.workerMetrics}/metrics, Temporal SDK ${info.urls.workerSdkMetrics}/metrics, bridge ${info.urls.bridgeMetrics}/metrics`,
      `  local FCM        ${info.urls.fcmStandIn}   (stand-in for Google OAuth + FCM HTTP v1; simulated phones fetch their wakes here)`,
      `  environment      . ${path.relative(projectRoot, path.join(config.dir, 'env'))}`,
      `  logs             ${logs}/{api,worker,bridge,${fcmStandIn},temporal,nats-server}.log`,
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

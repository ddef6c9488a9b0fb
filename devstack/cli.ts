/**
 * The development stack's command line, driven by the Makefile: `up` (everything in the
 * background, returns once ready), `dev` (the same, then the live demonstration, then logs
 * until Ctrl-C stops it all), `down` (stops everything this stack started).
 */
import { createReadStream, existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../src/process/paths.js';
import { loadDevStackConfig, type DevStackConfig } from './config.js';
import { logFile } from './daemons.js';
import { describeStackEnvironment } from './environment.js';
import { apps, down, fcmStandIn, up, type StackInfo } from './stack.js';

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
      "In force (yours: set in the environment of make; the rest: the stack's defaults):",
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

/**
 * The container image without a container engine: deploy/build.sh — the script the
 * Dockerfile's build stage runs — builds into a clean directory here, from npm's cache only,
 * and the image's processes start from that directory as the image starts them (`node
 * dist/src/bin/<process>.js` with the directory as the working directory) against a private
 * PostgreSQL, NATS and Temporal dev server (./services.ts). They run as in production: each process as its own
 * least-privileged PostgreSQL role (deploy/postgres/*.sql applied as they are), in a Temporal
 * namespace prepared with the CLI commands of docs/deployment.md. A phone registers, is woken,
 * drains and is revoked; the maintenance Schedule prunes a device without a session; then
 * SIGTERM stops each process with exit code 0.
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, lstatSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateUp, readMigrations } from '../../src/db/migrate.js';
import { hostStandInMigrationsDir, serviceMigrationsDir } from '../../src/db/migrations.js';
import { createDatabasePool, type DatabasePool } from '../../src/db/pool.js';
import { waitFor } from '../../devstack/daemons.js';
import { projectRoot } from '../../src/process/paths.js';
import { createDeviceKeys, startDistributor, type LocalDistributor } from '../../simulator/distributor.js';
import { hostFixtures } from '../support/host-fixtures.js';
import { signDeviceToken, testJwtSecret } from '../support/jwt.js';
import { freePort } from '../../devstack/ports.js';
import { startDeployServices, type DeployServices } from './services.js';
import { runSql } from '../support/run-sql.js';

/** The Dockerfile's WORKDIR: what deploy/build.sh built. */
let app: string;
let buildLog = '';

beforeAll(async () => {
  // Resolved, so that links inside it compare with it even when the temp dir is itself a link.
  app = realpathSync(mkdtempSync(path.join(tmpdir(), 'zippchat-push-image-')));
  // npm_config_offline: the production dependencies come from npm's cache (tools/install.sh
  // filled it); nothing is downloaded during the tests.
  const build = spawn('bash', [path.join(projectRoot, 'deploy', 'build.sh'), app], {
    env: { ...process.env, npm_config_offline: 'true', npm_config_update_notifier: 'false' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  build.stdout.on('data', (chunk: Buffer) => (buildLog += chunk.toString()));
  build.stderr.on('data', (chunk: Buffer) => (buildLog += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => build.once('exit', resolve));
  if (code !== 0) {
    const hint = /ENOTCACHED/.test(buildLog) ? " (a package is missing from npm's cache: `npm ci` — make install — fills it)" : '';
    throw new Error(`deploy/build.sh exited ${code}${hint}:\n${buildLog}`);
  }
}, 900_000);

afterAll(() => {
  if (app !== undefined) rmSync(app, { recursive: true, force: true });
});

describe('deploy/build.sh: what the image holds', () => {
  it('the five commands, the prebuilt workflow bundle and the service migrations — no tooling, no test code, no host stand-in', () => {
    for (const entry of ['api', 'worker', 'bridge', 'migrate', 'push-admin'])
      expect(existsSync(path.join(app, 'dist', 'src', 'bin', `${entry}.js`)), entry).toBe(true);
    expect(readFileSync(path.join(app, 'dist', 'workflow-bundle.js'), 'utf8')).toContain('registrationWorkflow');
    expect(sortedEntries(path.join(app, 'dist'))).toEqual([
      'activities',
      'domain',
      'src',
      'temporal',
      'workflow-bundle-traced.js',
      'workflow-bundle.js',
    ]);
    // Only what the entry points import: the dev stack, its stand-ins, the simulator, the benchmarks and the operators' tools are not.
    expect(sortedEntries(path.join(app, 'dist')).filter((e) => ['devstack', 'simulator', 'bench', 'capacity'].includes(e))).toEqual([]);
    expect(sortedEntries(path.join(app, 'dist', 'src', 'bin')).filter((f) => f.endsWith('.js'))).toEqual([
      'api.js',
      'bridge.js',
      'bundle-workflows.js',
      'migrate.js',
      'push-admin.js',
      'worker.js',
    ]);
    expect(sortedEntries(path.join(app, 'migrations'))).toEqual(sortedEntries(serviceMigrationsDir).filter((f) => f.endsWith('.sql')));
    expect(sortedEntries(app)).toEqual(['dist', 'migrations', 'node_modules', 'package-lock.json', 'package.json']);
  });

  it('production dependencies only, with the one native Temporal core bridge this platform loads', () => {
    const modules = path.join(app, 'node_modules');
    const manifest = JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as { dependencies: object; devDependencies: object };
    for (const name of Object.keys(manifest.dependencies)) expect(existsSync(path.join(modules, name)), name).toBe(true);
    // The development tools (other development dependencies may also be dependencies of a production package).
    const tools = ['typescript', 'vitest', 'eslint', 'tsx', '@temporalio/testing', 'fast-check', 'typescript-eslint'].filter(
      (n) => n in manifest.devDependencies,
    );
    expect(tools.length).toBeGreaterThan(3);
    for (const name of tools) expect(existsSync(path.join(modules, name)), `${name} (a development dependency)`).toBe(false);
    const releases = sortedEntries(path.join(modules, '@temporalio', 'core-bridge', 'releases'));
    expect(releases).toHaveLength(1);
    expect(releases[0]).toMatch(process.arch === 'arm64' ? /^aarch64-unknown-linux-gnu$/ : /^x86_64-unknown-linux-gnu$/);
  });

  it("stands alone: no link leads out of it (the build links the checkout's dependencies only while compiling)", () => {
    const outside: string[] = [];
    walk(app, (file) => {
      if (!lstatSync(file).isSymbolicLink()) return;
      const target = path.resolve(path.dirname(file), readlinkSync(file));
      if (!target.startsWith(app + path.sep)) outside.push(`${file} → ${target}`);
    });
    expect(outside).toEqual([]);
  });

  it('the Dockerfile builds with this script on Node 24 and runs node as an unprivileged PID 1 in its output', () => {
    const dockerfile = readFileSync(path.join(projectRoot, 'Dockerfile'), 'utf8');
    const lines = dockerfile.split('\n').filter((l) => l.trim() !== '' && !l.trimStart().startsWith('#'));
    const stages = lines.filter((l) => l.startsWith('FROM '));
    expect(stages).toHaveLength(2);
    // Both stages on one base image, pinned by its digest: a rebuilt tag cannot change the image.
    expect(stages[0]).toMatch(/^FROM node:\$\{NODE_VERSION\}-\S*slim@\$\{NODE_DIGEST\} AS build$/);
    expect(stages[1]).toBe(stages[0]!.replace(/ AS build$/, ''));
    expect(/^ARG NODE_DIGEST=(\S+)$/m.exec(dockerfile)?.[1]).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(Number(/^ARG NODE_VERSION=(\d+)\./m.exec(dockerfile)?.[1])).toBe(24);
    expect(lines).toContainEqual(expect.stringMatching(/^RUN .*deploy\/build\.sh \/app$/));
    const runtime = lines.slice(lines.indexOf(stages[1]!));
    expect(runtime).toContainEqual(expect.stringMatching(/^COPY --from=build .*\/app \/app$/));
    expect(runtime).toContain('WORKDIR /app');
    const user = /^USER (\d+)(?::(\d+))?$/m.exec(runtime.join('\n'));
    expect(Number(user?.[1])).toBeGreaterThan(0);
    expect(runtime).toContain('ENTRYPOINT ["node"]');
    expect(runtime.some((l) => l.startsWith('RUN '))).toBe(false);
    // OCI labels, the version being package.json's.
    const labels = ociLabels(runtime.join('\n'));
    const version = (JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as { version: string }).version;
    expect(/^ARG VERSION=(\S+)$/m.exec(dockerfile)?.[1]).toBe(version);
    for (const name of ['title', 'description', 'version', 'revision', 'created', 'source', 'base.name', 'base.digest'])
      expect(Object.keys(labels), name).toContain(`org.opencontainers.image.${name}`);
    expect(labels['org.opencontainers.image.version']).toBe('${VERSION}');
    expect(labels['org.opencontainers.image.base.digest']).toBe('${NODE_DIGEST}');
    const ignored = readFileSync(path.join(projectRoot, '.dockerignore'), 'utf8').split('\n');
    for (const entry of ['node_modules', 'dist', '.tools', '.dev', '.git']) expect(ignored, entry).toContain(entry);
  });
});

describe("the image's processes, from the build output, against real PostgreSQL, NATS and Temporal", () => {
  let services: DeployServices | undefined;
  let pool: DatabasePool | undefined;
  let distributor: LocalDistributor | undefined;
  let connection: Connection | undefined;
  const running: Running[] = [];

  afterAll(async () => {
    for (const p of running) if (p.child.exitCode === null) p.child.kill('SIGKILL');
    await connection?.close();
    await distributor?.close();
    await pool?.end();
    await services?.stop();
  }, 120_000);

  it('migrate as the owning role, api, worker and bridge each as its own role: ready, a phone woken and drained, maintenance run, then SIGTERM → exit 0', async () => {
    services = await startDeployServices();
    const db = { url: services.databaseUrl };
    // PostgreSQL as the instance has it: the host's tables, owned by someone else.
    await migrateUp(db.url, readMigrations([hostStandInMigrationsDir]));
    const roles = ['zippchat_push_migrate', 'zippchat_push_api', 'zippchat_push_worker', 'zippchat_push_bridge'];
    await runSql(
      db.url,
      roles.map((r) => `DO $$ BEGIN CREATE ROLE ${r} LOGIN PASSWORD '${r}-pw'; EXCEPTION WHEN duplicate_object THEN NULL; END $$;`).join('\n'),
    );
    await runSql(db.url, readFileSync(path.join(projectRoot, 'deploy', 'postgres', 'roles.sql'), 'utf8'));
    const asRole = (role: string) => {
      const url = new URL(db.url);
      url.username = role;
      url.password = `${role}-pw`;
      return url.toString();
    };

    const migrate = await runToEnd(['dist/src/bin/migrate.js', 'up'], { DATABASE_URL: asRole('zippchat_push_migrate'), LOG_LEVEL: 'info' });
    expect(migrate, 'migrate up').toMatchObject({ code: 0 });
    // Every migration of the service's own, as the image ships them (never the host stand-in).
    const shipped = readMigrations([serviceMigrationsDir]);
    const latest = shipped.at(-1)!.version;
    const labels = shipped.map((m) => `${String(m.version).padStart(6, '0')}_${m.name}`);
    expect(migrate.output).toContain(`migrate: applied ${labels.join(', ')}; version ${latest}`);
    const again = await runToEnd(['dist/src/bin/migrate.js', 'up'], { DATABASE_URL: asRole('zippchat_push_migrate'), LOG_LEVEL: 'info' });
    expect(again.output).toContain(`migrate: nothing to do; version ${latest}`);
    await runSql(db.url, readFileSync(path.join(projectRoot, 'deploy', 'postgres', 'grants.sql'), 'utf8'));

    // Temporal as docs/deployment.md prepares it: a namespace with the three search attributes.
    const namespace = `deploy-${randomBytes(4).toString('hex')}`;
    const address = services.temporalAddress;
    const temporalCli = (args: readonly string[]) => runTemporalCli(services!.temporalCli, args);
    temporalCli(['operator', 'namespace', 'create', '--namespace', namespace, '--retention', '24h', '--address', address]);
    // One attribute per command: the CLI (1.9) takes several --name but registers only the first.
    for (const name of ['PushUserId', 'PushDeviceId', 'PushTransport']) {
      temporalCli(['operator', 'search-attribute', 'create', '--namespace', namespace, '--name', name, '--type', 'Keyword', '--address', address]);
    }
    connection = await Connection.connect({ address });
    const client = new Client({ connection, namespace });
    await waitFor(
      'the new namespace to serve',
      async () =>
        client.workflow.count().then(
          () => true,
          () => false,
        ),
      60_000,
    );

    const natsUrl = services.natsUrl;
    distributor = await startDistributor();

    const [apiPort, workerPort, bridgePort] = [await freePort(), await freePort(), await freePort()];
    const common = {
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      TEMPORAL_ADDRESS: address,
      TEMPORAL_NAMESPACE: namespace,
      TEMPORAL_TASK_QUEUE: 'push-wakes',
    };
    const unifiedPush = { PUSH_UP_ALLOW_PRIVATE: 'true', PUSH_UP_ALLOW_HTTP: 'true' };
    const env = {
      api: { ...common, ...unifiedPush, DATABASE_URL: asRole('zippchat_push_api'), PORT: String(apiPort), JWT_SECRET: testJwtSecret },
      worker: {
        ...common,
        ...unifiedPush,
        DATABASE_URL: asRole('zippchat_push_worker'),
        WORKER_METRICS_PORT: String(workerPort),
        WORKER_SDK_METRICS_PORT: '0',
      },
      bridge: { ...common, DATABASE_URL: asRole('zippchat_push_bridge'), BRIDGE_METRICS_PORT: String(bridgePort), NATS_URL: natsUrl },
    };
    const urls = { api: `http://127.0.0.1:${apiPort}`, worker: `http://127.0.0.1:${workerPort}`, bridge: `http://127.0.0.1:${bridgePort}` };
    for (const name of ['api', 'worker', 'bridge'] as const) running.push(start(name, [`dist/src/bin/${name}.js`], env[name]));
    for (const [i, url] of [urls.api, urls.worker, urls.bridge].entries()) await waitReady(url, running[i]!);

    // A phone of bob's with a live session registers (UnifiedPush, RFC 8291 keys); a message
    // from alice in their DM wakes it; it drains what was waiting.
    pool = await createDatabasePool(db.url, { maximumPoolSize: 2 });
    const host = hostFixtures(pool);
    const [alice, bob] = await host.users(2);
    const dm = await host.dm([alice!, bob!]);
    await runSql(
      db.url,
      `INSERT INTO refresh_tokens (user_id, device_id, expires_at) VALUES (${bob}, 'deploy-phone', now() + interval '30 days');
       INSERT INTO device_keys (user_id, device_id, identity_key) VALUES (${bob}, 'deploy-phone', '\\x01');`,
    );
    const phone = await registerPhone(urls.api, bob!, 'deploy-phone', distributor);
    // The worker made the maintenance Schedule in this namespace. Paused, so that its own
    // 10-minute clock cannot prune the old phone before the run this test triggers.
    const schedule = client.schedule.getHandle('push-maintenance');
    await waitFor("the worker's maintenance Schedule", async () => (await schedule.describe().catch(() => undefined)) !== undefined, 60_000);
    await schedule.pause('the test triggers its own run');
    // An old phone of bob's whose session is then revoked on the host: maintenance prunes it.
    await runSql(db.url, `INSERT INTO refresh_tokens (user_id, device_id, expires_at) VALUES (${bob}, 'old-phone', now() + interval '30 days');`);
    await registerPhone(urls.api, bob!, 'old-phone', distributor);
    await runSql(db.url, `UPDATE refresh_tokens SET revoked_at = now() WHERE user_id = ${bob} AND device_id = 'old-phone';`);

    // alice writes in the DM: the host publishes MESSAGE_CREATE (the repository's demo-say does it as the host would).
    const say = spawnSync('npm', ['run', '-s', 'demo-say', '--', '--nats', natsUrl, '--channel', dm, '--author', alice!, 'hello'], {
      cwd: projectRoot,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(say.status, say.stderr).toBe(0);
    await waitFor('the wake', async () => distributor!.received.some((m) => m.endpoint === phone.endpoint), 60_000).catch((error: unknown) => {
      throw new Error(`${String(error)}\n${running.map((p) => `--- ${p.name}\n${p.output()}`).join('\n')}`);
    });
    expect(distributor.problems).toEqual([]);
    const drain = await fetch(`${urls.api}/api/push/drain`, { method: 'POST', headers: { authorization: `Bearer ${phone.token}` } });
    expect(drain.status).toBe(200);
    expect(await drain.json()).toMatchObject([{ channel_id: dm, is_dm: true, message_count: 1 }]);

    // push-admin runs where the worker runs, with its settings.
    const count = await runToEnd(['dist/src/bin/push-admin.js', 'count', '--json'], env.worker);
    expect(count, count.output).toMatchObject({ code: 0 });
    expect(count.output).toMatch(/unifiedpush/);

    // A maintenance run now, as the worker's role (a paused Schedule still takes a trigger); the
    // run is the action after those taken before the trigger (one may have run before the pause).
    const actionsBefore = (await schedule.describe()).info.recentActions.length;
    await schedule.trigger();
    const run = await waitFor(
      'the maintenance run to start',
      async () => (await schedule.describe()).info.recentActions.at(actionsBefore)?.action.workflow,
      60_000,
    );
    const report = await client.workflow.getHandle(run.workflowId, run.firstExecutionRunId).result();
    expect(report).toMatchObject({ prunedNoSession: 1, healedStranded: 0 });
    expect(await registrationsOf(db.url, bob!)).toEqual(['deploy-phone']);

    // DELETE /api/keys/devices/{id}: key bundle, sessions and registration go together.
    const revoke = await fetch(`${urls.api}/api/keys/devices/deploy-phone`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${phone.token}` },
    });
    expect(revoke.status).toBe(204);
    expect(await registrationsOf(db.url, bob!)).toEqual([]);

    for (const p of running) {
      const code = await p.stop();
      expect(code, `${p.name} exit code; output:\n${p.output()}`).toBe(0);
      expect(p.output()).toContain(`${p.name} stopped`);
      expect(p.output(), p.name).not.toMatch(/permission denied/i);
    }
  }, 600_000);
});

// --- helpers -----------------------------------------------------------------------------

interface Running {
  readonly name: string;
  readonly child: ReturnType<typeof spawn>;
  readonly exited: Promise<number | null>;
  output(): string;
  stop(): Promise<number | null>;
}

/** `node <args>` in the build output with only `env` (and PATH), as the image's ENTRYPOINT does. */
function start(name: string, args: readonly string[], env: Readonly<Record<string, string>>): Running {
  const child = spawn(process.execPath, args, {
    cwd: app,
    env: { PATH: '/usr/local/bin:/usr/bin:/bin', NODE_ENV: 'production', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    name,
    child,
    exited,
    output: () => output,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

async function runToEnd(args: readonly string[], env: Readonly<Record<string, string>>): Promise<{ code: number | null; output: string }> {
  const p = start(args[0]!, args, env);
  const code = await p.exited;
  return { code, output: p.output() };
}

async function waitReady(url: string, p: Running): Promise<void> {
  await waitFor(
    `${p.name} ${url}/readyz`,
    async () => {
      if (p.child.exitCode !== null) throw new Error(`${p.name} exited with ${p.child.exitCode}: ${p.output()}`);
      return (await fetch(`${url}/readyz`).catch(() => undefined))?.status === 200;
    },
    90_000,
  );
}

function runTemporalCli(cli: string, args: readonly string[]): void {
  const result = spawnSync(cli, args, { encoding: 'utf8', timeout: 60_000 });
  if (result.status !== 0) throw new Error(`temporal ${args.join(' ')}: ${result.stderr || result.stdout}`);
}

async function registerPhone(api: string, userId: string, deviceId: string, distributor: LocalDistributor) {
  const keys = createDeviceKeys();
  const endpoint = distributor.register(keys);
  const token = await signDeviceToken({ userId, deviceId, secret: testJwtSecret });
  const put = await fetch(`${api}/api/push/registration`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      transport: 'unifiedpush',
      token: endpoint,
      p256dh: keys.p256dh.toString('base64url'),
      auth: keys.auth.toString('base64url'),
    }),
  });
  expect(put.status, await put.clone().text()).toBe(200);
  return { endpoint, token };
}

async function registrationsOf(databaseUrl: string, userId: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ device_id: string }>('SELECT device_id FROM push_registrations WHERE user_id = $1 ORDER BY device_id', [
      userId,
    ]);
    return rows.map((r) => r.device_id);
  } finally {
    await client.end();
  }
}

/** The `key="value"` pairs of the LABEL instructions of a Dockerfile stage (continuation lines joined). */
function ociLabels(stage: string): Record<string, string> {
  const joined = stage.replace(/\\\n\s*/g, ' ');
  const labels: Record<string, string> = {};
  for (const line of joined.split('\n').filter((l) => l.startsWith('LABEL ')))
    for (const [, key, value] of line.matchAll(/([\w.-]+)="([^"]*)"/g)) labels[key!] = value!;
  return labels;
}

function sortedEntries(dir: string): string[] {
  return readdirSync(dir).sort();
}

function walk(dir: string, visit: (file: string) => void): void {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    visit(file);
    if (entry.isDirectory() && !entry.isSymbolicLink()) walk(file, visit);
  }
}

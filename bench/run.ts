/**
 * `make bench`: measurements on a private local stack (PostgreSQL, Temporal dev server) under
 * .dev/bench, written to bench/results/latest.json and the table in docs/benchmarks.md.
 *
 *   1. the wake path, local vs regular activities: signal → wake latency, and the history
 *      events each wake costs (what decides between them, issue 4);
 *   2. the claim: conditional UPDATEs per second with concurrent claimers.
 *
 * Numbers depend on the machine; they are recorded, never asserted.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { sql } from 'slonik';
import { createActivities } from '../activities/index.js';
import { createRegistrationActivities } from '../activities/registration.js';
import { loadConfig } from '../src/config/index.js';
import { migrateUp } from '../src/db/migrate.js';
import { serviceMigrations } from '../src/db/migrations.js';
import { createDatabasePool, type DatabasePool } from '../src/db/pool.js';
import { ensureDatabase, startBackingServices, stopEverything } from '../src/dev/services.js';
import { findBinaries } from '../src/dev/tools.js';
import { createLogger } from '../src/log.js';
import { projectRoot } from '../src/paths.js';
import { createDeviceKeys, startDistributor, type FakeDistributor } from '../src/simulator/distributor.js';
import { createTransports } from '../src/transports/index.js';
import { registrationWorkflowId, registrationWorkflowType } from '../temporal/names.js';
import { createWorker } from '../temporal/worker.js';
import { pendingSignal, type RegistrationWorkflowInput } from '../workflows/registration-messages.js';

interface Result {
  readonly name: string;
  readonly value: number;
  readonly unit: string;
  readonly note: string;
}

const results: Result[] = [];
const record = (name: string, value: number, unit: string, note = '') => {
  results.push({ name, value: Math.round(value * 10) / 10, unit, note });
  process.stdout.write(`  ${name}: ${results.at(-1)!.value} ${unit}${note ? ` (${note})` : ''}\n`);
};

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const dir = path.join(projectRoot, '.dev', 'bench');
  rmSync(dir, { recursive: true, force: true });
  const binaries = findBinaries({});
  const ports = { postgres: 56432, nats: 56222, temporal: 56233, temporalUi: undefined };
  process.stdout.write('bench: starting private PostgreSQL and Temporal dev server under .dev/bench\n');
  const services = await startBackingServices({ dir, binaries, ports, fast: false });
  try {
    await ensureDatabase(services.postgres.url('postgres'), 'bench');
    const databaseUrl = services.postgres.url('bench');
    await migrateUp(databaseUrl, serviceMigrations({ withHostStandIn: true }));
    const pool = await createDatabasePool(databaseUrl, { maximumPoolSize: 20 });
    try {
      await benchClaim(pool);
      await benchWakePath(pool, databaseUrl, services.temporalAddress);
    } finally {
      await pool.end();
    }
  } finally {
    await stopEverything(dir, binaries.pgBin);
  }
  writeResults();
}

/** Concurrent claimers on distinct devices: the SQL's own cost. */
async function benchClaim(pool: DatabasePool): Promise<void> {
  process.stdout.write('claim SQL\n');
  const devices = 200;
  await pool.query(sql.unsafe`INSERT INTO users (id, username) SELECT g, 'u' || g FROM generate_series(1, ${devices}) g`);
  await pool.query(sql.unsafe`
    INSERT INTO push_registrations (user_id, device_id, transport, token)
    SELECT g, 'phone', 'unifiedpush', 'https://up.example/' || g FROM generate_series(1, ${devices}) g`);
  await pool.query(sql.unsafe`
    INSERT INTO push_pending (registration_id, channel_id, message_count, first_message_id, first_at, last_message_id, is_dm)
    SELECT id, 1, 1, 1, now(), 1, false FROM push_registrations`);
  const { claimWake } = createRegistrationActivities({
    pool,
    log: createLogger({ level: 'silent', name: 'bench' }),
    coalescing: { minIntervalMs: 15_000, rewakeAfterMs: 900_000 },
    transports: { forRegistration: () => { throw new Error('not used'); } },
  });
  const rounds = 20;
  const started = performance.now();
  for (let round = 0; round < rounds; round++) {
    const now = Date.now() + round * 1_000_000; // past the re-wake each round: every claim succeeds
    await Promise.all(Array.from({ length: devices }, (_, i) => claimWake({ userId: String(i + 1), deviceId: 'phone', now })));
  }
  const seconds = (performance.now() - started) / 1000;
  record('claim: successful claims per second', (rounds * devices) / seconds, 'claims/s', `${devices} devices, 20 concurrent connections`);
  await pool.query(sql.unsafe`TRUNCATE push_registrations CASCADE`);
  await pool.query(sql.unsafe`DELETE FROM users`);
}

/** Signal → wake on the dev server, local vs regular activities. */
async function benchWakePath(pool: DatabasePool, databaseUrl: string, temporalAddress: string): Promise<void> {
  const distributor = await startDistributor();
  const connection = await Connection.connect({ address: temporalAddress });
  const client = new Client({ connection });
  const nativeConnection = await NativeConnection.connect({ address: temporalAddress });
  const config = loadConfig('worker', { DATABASE_URL: databaseUrl, PUSH_UP_ALLOW_PRIVATE: 'true', PUSH_UP_ALLOW_HTTP: 'true', PUSH_MIN_INTERVAL_MS: '1000' });
  const log = createLogger({ level: 'silent', name: 'bench' });
  const transports = createTransports(config, log);
  const taskQueue = `bench-${Date.now()}`;
  const worker = await createWorker({
    connection: nativeConnection,
    namespace: 'default',
    taskQueue,
    activities: createActivities({ pool, log, coalescing: config.coalescing, transports, temporal: client, taskQueue }),
  });
  const running = worker.run();
  try {
    for (const kind of ['local', 'regular'] as const) {
      process.stdout.write(`wake path, ${kind} activities\n`);
      await measureKind(kind, { pool, client, distributor, taskQueue });
    }
  } finally {
    worker.shutdown();
    await running;
    await transports.close();
    await nativeConnection.close();
    await connection.close();
    await distributor.close();
  }
}

async function measureKind(
  kind: 'local' | 'regular',
  deps: { pool: DatabasePool; client: Client; distributor: FakeDistributor; taskQueue: string },
): Promise<void> {
  const { pool, client, distributor, taskQueue } = deps;
  const devices = 30;
  const base = kind === 'local' ? 1_000 : 2_000;
  const latencies: number[] = [];
  for (let i = 0; i < devices; i++) {
    const userId = String(base + i);
    const keys = createDeviceKeys();
    const endpoint = distributor.register(keys);
    await pool.query(sql.unsafe`INSERT INTO users (id, username) VALUES (${userId}, ${`bench${userId}`})`);
    await pool.query(sql.unsafe`
      INSERT INTO push_registrations (user_id, device_id, transport, token, up_p256dh, up_auth)
      VALUES (${userId}, 'phone', 'unifiedpush', ${endpoint}, ${sql.binary(keys.p256dh)}, ${sql.binary(keys.auth)})`);
    await pool.query(sql.unsafe`
      INSERT INTO push_pending (registration_id, channel_id, message_count, first_message_id, first_at, last_message_id, is_dm)
      SELECT id, 1, 1, 1, now(), 1, true FROM push_registrations WHERE user_id = ${userId}`);
    const input: RegistrationWorkflowInput = { userId, deviceId: 'phone', transport: 'unifiedpush', activityKind: kind };
    const started = performance.now();
    await client.workflow.signalWithStart(registrationWorkflowType, {
      taskQueue,
      workflowId: registrationWorkflowId(userId, 'phone'),
      args: [input],
      signal: pendingSignal,
      signalArgs: [],
    });
    while (!distributor.received.some((m) => m.endpoint === endpoint)) await new Promise((r) => setTimeout(r, 2));
    latencies.push(performance.now() - started);
  }
  latencies.sort((a, b) => a - b);
  record(`wake path (${kind}): start → wake p50`, latencies[Math.floor(devices / 2)]!, 'ms', `${devices} devices, one at a time`);
  record(`wake path (${kind}): start → wake p95`, latencies[Math.floor(devices * 0.95)]!, 'ms');
  const history = await client.workflow.getHandle(registrationWorkflowId(String(base), 'phone')).fetchHistory();
  record(`wake path (${kind}): history events for start + one wake`, history.events?.length ?? 0, 'events');
}

function writeResults(): void {
  const machine = `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
  mkdirSync(path.join(projectRoot, 'bench', 'results'), { recursive: true });
  const at = new Date().toISOString();
  writeFileSync(path.join(projectRoot, 'bench', 'results', 'latest.json'), JSON.stringify({ at, machine, results }, null, 2) + '\n');
  const rows = results.map((r) => `| ${r.name} | ${r.value} ${r.unit} | ${r.note} |`).join('\n');
  writeFileSync(
    path.join(projectRoot, 'docs', 'benchmarks.md'),
    `# Benchmarks

Written by \`make bench\` (bench/run.ts) on ${at}, ${machine}. A private PostgreSQL and Temporal
dev server (SQLite) under .dev/bench; the dev server's throughput is far below a cluster's, so
read the numbers as comparisons, not capacities. Never asserted in tests.

| measurement | value | setup |
| --- | --- | --- |
${rows}

Local vs regular activities: see docs/architecture.md for the decision these numbers support.
`,
  );
}

main().catch((error: unknown) => {
  process.stderr.write(`bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});

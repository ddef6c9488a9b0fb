/**
 * The upgrade tier: every release the first release upgrades from in place
 * (test/support/previous-versions.ts) runs for real — its own build, taken from git, its own
 * migrations, its api (two replicas), worker and bridge on a private stack — while phones are
 * left in every state that matters: a wake outstanding, a DM pending, an escalation due, a
 * back-off, an outage hold, a budget hold, a registration deleted. Then today's release is
 * rolled out by the documented procedure (docs/operations.md, "Upgrading"): migrations while the
 * old processes run, the worker, the rest one replica at a time, `push-admin restart --wedged`.
 *
 * Checked: every device is woken when its rules say — the time the wake policy
 * (domain/wake-policy.ts) gives for the device as PostgreSQL held it when the workers were
 * replaced, not before it and not long after; `GET` and `PUT /api/push/registration` never
 * answer 5xx, before, during or after; nothing is lost — every message published is drained,
 * exactly, by its phone; nothing is wedged; and a deleted registration stays deleted.
 */
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { connect } from '@nats-io/transport-node';
import { sql, type DatabasePool } from 'slonik';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { waitFor } from '../../devstack/daemons.js';
import { startFakeFcm, type FakeFcm } from '../../devstack/stand-ins/fcm.js';
import { createServiceAccount, startGoogleOAuth, type FakeGoogleOAuth } from '../../devstack/stand-ins/google-oauth.js';
import { startDistributor } from '../../simulator/distributor.js';
import { loadConfig } from '../../src/config/index.js';
import { createDatabasePool } from '../../src/db/pool.js';
import { transportNameSchema } from '../../domain/vocabulary.js';
import { projectRoot } from '../../src/process/paths.js';
import { VIEW_CHANNEL } from '../../src/permissions/flags.js';
import { maintenanceScheduleId, registrationWorkflowId } from '../../temporal/names.js';
import { countWedged } from '../../temporal/wedged-workflows.js';
import { snapshotOf, wakeVerdict, type WakePolicy } from '../../domain/wake-policy.js';
import { startFaultStack } from '../support/fault-stack.js';
import { hostFixtures, nextId } from '../support/host-fixtures.js';
import { preparePreviousVersion, previousVersions, type PreviousVersion } from '../support/previous-versions.js';
import { ChatServer, delivered, Fleet, watchApi, type Phone } from './fleet.js';

const env = {
  PUSH_MIN_INTERVAL_MS: '4000',
  PUSH_REWAKE_AFTER_MS: '45000',
  PUSH_FCM_WAKE_BURST: '2',
  PUSH_FCM_WAKE_REFILL_MS: '30000',
  PUSH_FCM_DM_RESERVE: '1',
  PUSH_UP_ALLOW_PRIVATE: 'true',
  PUSH_UP_ALLOW_HTTP: 'true',
  LOG_LEVEL: 'info',
};
/** How long after the time its rules allow (or the new worker's start, if later) a wake may take on a loaded machine. */
const slackMs = 25_000;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

describe('an in-place upgrade to this release', () => {
  it.each(previousVersions.map((v) => [v.name, v] as const))(
    'from %s: every device woken when its rules say, no 5xx, nothing lost',
    async (_name, version) => {
      await upgradeFrom(version);
    },
    600_000,
  );
});

interface Channels {
  readonly server: string;
  readonly dm: string;
}

async function upgradeFrom(version: PreviousVersion): Promise<void> {
  const release = preparePreviousVersion(version, (line) => console.log(`upgrade tier: ${line}`));
  const { google, fcm } = await fakeGoogle();
  cleanups.push(
    () => google.close(),
    () => fcm.close(),
  );
  const account = google.account;
  const up = await startDistributor();
  const outageOrigin = await startDistributor(); // a second origin, for the outage
  cleanups.push(
    () => up.close(),
    () => outageOrigin.close(),
  );
  const serviceEnv = { ...env, FCM_PROJECT_ID: account.projectId, FCM_CREDENTIALS_JSON: account.keyFile(google.url), FCM_ENDPOINT: fcm.url };
  const policy: WakePolicy = loadConfig('worker', { DATABASE_URL: 'postgres://x@127.0.0.1/x', ...serviceEnv }).wakePolicy;

  const stack = await startFaultStack({ apps: { api: 2, worker: 1, bridge: 1 }, env: serviceEnv, release, name: 'test-upgrade' });
  cleanups.push(() => stack.close());
  const pool = await createDatabasePool(stack.databaseUrl, { maximumPoolSize: 4 });
  cleanups.push(() => pool.end());
  const connection = await Connection.connect(stack.temporalConnection);
  cleanups.push(() => connection.close());
  const temporal = new Client({ connection });
  const pauseMaintenance = () => temporal.schedule.getHandle(maintenanceScheduleId).pause('upgrade tier: devices must be woken by the primary paths');
  await pauseMaintenance();
  const nc = await connect({ servers: stack.natsUrl, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  cleanups.push(() => nc.close());

  const apiUrls = () =>
    stack
      .appsOf('api')
      .filter((a) => stack.isRunning(a.name))
      .map((a) => a.url);
  const fleet = new Fleet(apiUrls, [up, outageOrigin], fcm);
  cleanups.push(async () => fleet.close());
  const chat = new ChatServer(nc);
  const host = hostFixtures(pool);
  const [sender] = await host.users(1);
  const channels = new Map<Phone, Channels>();
  const phone = async (name: string, transport: 'up' | 'outage' | 'fcm') => {
    const [userId] = await host.users(1);
    const deviceId = `${name}-${nextId()}`;
    await host.session(userId!, deviceId);
    const server = await host.server({ owner: sender!, everyone: VIEW_CHANNEL, members: [userId!] });
    const made = await fleet.register(
      name,
      userId!,
      deviceId,
      transport === 'fcm' ? { transport: 'fcm' } : { transport: 'unifiedpush', distributor: transport === 'up' ? up : outageOrigin },
    );
    channels.set(made, { server: await host.channel(server), dm: await host.dm([sender!, userId!]) });
    return made;
  };
  const say = (to: Phone, where: 'server' | 'dm' = 'server') => chat.message(channels.get(to)![where], sender!);
  const deliveries = (p: Phone) => p.wakes.filter(delivered).length;
  const untilDelivered = (p: Phone, count: number, timeoutMs = 30_000) =>
    waitFor(`${p.name}: ${count} wake(s) delivered`, async () => deliveries(p) >= count && (await p.draining.then(() => true)), timeoutMs);

  // ── The previous release, with its phones in every state that matters ──────────────────
  const outage = [
    await phone('outage-1', 'outage'),
    await phone('outage-2', 'outage'),
    await phone('outage-3', 'outage'),
    await phone('outage-4', 'outage'),
  ];
  const budget = await phone('budget', 'fcm');
  const backoff = await phone('backoff', 'up');
  const idle = await phone('idle', 'up');
  const deleted = await phone('deleted', 'up');
  const dmPending = await phone('dm-pending', 'up');
  const outstanding = await phone('outstanding', 'up');
  const escalation = await phone('escalation', 'up');

  // An outage hold: the origin delivered to all four, then fails for every one of them.
  for (const p of outage) await say(p);
  for (const p of outage) await untilDelivered(p, 1);
  outageOrigin.answerAll({ status: 503 });
  for (const p of outage) await say(p);
  await waitFor('a device held back by the outage', async () => (await heldByOutage(pool, outage)) > 0, 90_000);

  // A budget hold: one channel wake spends what channels may (burst 2, one kept for DMs).
  await say(budget);
  await untilDelivered(budget, 1);
  await say(budget);
  await waitFor('the budget holding a channel wake back', async () => (await verdictOf(pool, policy, budget))?.heldBack === 'budget', 30_000);

  // A back-off: the distributor rate-limits this endpoint (Retry-After 30 s).
  up.answerFor(backoff.token, { status: 429, headers: { 'retry-after': '30' } });
  await say(backoff);
  await waitFor('the 429', async () => backoff.wakes.some((w) => w.status === 429), 30_000);

  for (const p of [idle, deleted, dmPending]) await say(p);
  for (const p of [idle, deleted, dmPending]) await untilDelivered(p, 1);
  // Wakes outstanding (undrained), normal priority: one to be re-woken, one to be escalated by a DM.
  outstanding.autoDrain = false;
  escalation.autoDrain = false;
  await say(outstanding);
  await say(escalation);
  for (const p of [outstanding, escalation]) await waitFor(`${p.name} woken`, async () => deliveries(p) === 1, 30_000);

  const watch = watchApi(fleet, idle);
  try {
    // ── Step 1: this release's migrations, while the previous release runs ─────────────
    const migrated = await run(path.join(projectRoot, 'dist', 'src', 'bin', 'migrate.js'), ['up', '--host-standin'], {
      DATABASE_URL: stack.databaseUrl,
    });
    expect(migrated).toMatchObject({ code: 0 });
    // Exactly the files numbered past the previous release's newest (both lines converge at
    // 000029; the migrations after it apply to either alike), ending at today's newest.
    const shipped = upFiles(path.join(projectRoot, 'migrations'));
    const previousNewest = Math.max(...upFiles(path.join(release, 'migrations')).map((f) => f.version));
    const due = shipped.filter((f) => f.version > previousNewest);
    expect(migrated.output).toBe(`migrate: applied ${due.map((f) => f.label).join(', ')}; version ${due.at(-1)!.version}\n`);
    // The previous release's api serves on the new schema.
    expect(await fleet.call(idle, 'GET', '/api/push/registration')).toMatchObject({ status: 200 });

    // ── Step 2: the worker. While none runs, a DM arrives for two phones and one registration is deleted ──
    await stack.stop('worker-1');
    await say(dmPending, 'dm');
    await say(escalation, 'dm');
    expect(await fleet.unregister(deleted)).toBe(204);
    await waitFor(
      'the DMs recorded',
      async () => (await verdictOf(pool, policy, escalation))?.escalation === true && (await hasDm(pool, dmPending)),
      30_000,
    );
    // What PostgreSQL holds now is what the new workers must act on: the rule says when.
    const snapshotAt = Date.now();
    const expectations = new Map<Phone, { readyAt: number; lowerBound: boolean }>();
    for (const p of [dmPending, escalation, outstanding, backoff, budget, ...outage]) {
      const verdict = (await verdictOf(pool, policy, p, snapshotAt))!;
      expect(verdict.readyAt !== null || verdict.due, `${p.name} has something to be woken for`).toBe(true);
      // Outage-held devices are woken when the outage ends, which may come before their back-off's end.
      expectations.set(p, { readyAt: verdict.readyAt ?? snapshotAt, lowerBound: !outage.includes(p) });
    }
    const wakesBefore = new Map(fleet.phones.map((p) => [p, p.wakes.length]));
    outstanding.autoDrain = true;
    escalation.autoDrain = true;
    stack.useRelease(projectRoot);
    await stack.start('worker-1');
    const workerAt = Date.now();
    await pauseMaintenance();
    // The providers recover as the new worker starts.
    up.answerFor(backoff.token, undefined);
    outageOrigin.answerAll(undefined);

    // ── Step 3: the rest, one replica at a time; a message arrives while the bridge is down ──
    for (const name of ['api-1', 'api-2', 'bridge-1']) {
      await stack.stop(name);
      if (name === 'bridge-1') await say(idle);
      await stack.start(name);
    }

    // ── Step 4: nothing wedged (the procedure's last step restarts what is) ──
    const restart = await run(path.join(projectRoot, 'dist', 'src', 'bin', 'push-admin.js'), ['restart', '--wedged', '--json'], {
      DATABASE_URL: stack.databaseUrl,
      TEMPORAL_ADDRESS: stack.temporalAddress,
      TEMPORAL_TASK_QUEUE: stack.taskQueue,
    });
    expect(restart).toMatchObject({ code: 0 });
    expect((JSON.parse(restart.output) as { results: unknown[] }).results).toEqual([]);

    // ── Every device woken when its rules say ──
    const timeline: string[] = [];
    const deadline = Math.max(...[...expectations.values()].map((e) => Math.max(e.readyAt, workerAt))) + slackMs;
    for (const [p, expected] of expectations) {
      const firstDelivered = () => p.wakes.slice(wakesBefore.get(p)).find(delivered);
      const outageDeadline = workerAt + policy.rewakeAfterMs + slackMs; // the longest back-off, then the outage's end
      await waitFor(
        `${p.name} woken after the upgrade`,
        async () => firstDelivered() !== undefined,
        Math.max(deadline, outageDeadline) - Date.now() + 5_000,
      );
      const wake = firstDelivered()!;
      const attempts = p.wakes.slice(wakesBefore.get(p));
      const since = (t: number) => `${((t - workerAt) / 1000).toFixed(1)} s`;
      timeline.push(
        `${p.name} ${expected.lowerBound ? `allowed ${since(expected.readyAt)}` : 'held by the outage'}, woken ${since(wake.at)} (${wake.priority})`,
      );
      if (expected.lowerBound) {
        // Not before the rule allows: no request at all (a held-back device must not be tried early).
        expect(attempts[0]!.at, `${p.name}: no wake before ${new Date(expected.readyAt).toISOString()}`).toBeGreaterThanOrEqual(
          expected.readyAt - 1_000,
        );
        expect(wake.at, `${p.name}: woken by then`).toBeLessThanOrEqual(Math.max(expected.readyAt, workerAt) + slackMs);
      } else {
        expect(wake.at, `${p.name}: woken once the outage ended`).toBeLessThanOrEqual(outageDeadline);
      }
    }
    console.log(`upgrade tier, from ${version.name}, relative to the new worker's start: ${timeline.join('; ')}`);
    expect(dmPending.wakes.slice(wakesBefore.get(dmPending)).find(delivered)!.priority).toBe('high');
    const escalated = escalation.wakes.slice(wakesBefore.get(escalation)).find(delivered)!;
    expect(escalated.priority).toBe('high');
    expect(escalated.at, 'escalated at once, not at the re-wake').toBeLessThan(escalation.wakes[0]!.at + policy.rewakeAfterMs);

    // The deleted registration stays deleted, its workflow ended, its phone never woken again.
    await waitFor(
      'the deleted device’s workflow ended',
      async () => (await temporal.workflow.getHandle(registrationWorkflowId(deleted.userId, deleted.deviceId)).describe()).status.name !== 'RUNNING',
      30_000,
    );
    expect(deleted.wakes.length).toBe(wakesBefore.get(deleted));
    expect(await registrationExists(pool, deleted)).toBe(false);

    // A phone registering after the upgrade, and one more message everywhere: all served.
    const fresh = await phone('fresh', 'up');
    const live = fleet.phones.filter((p) => p !== deleted);
    for (const p of live) await say(p);
    await waitFor(
      'every message drained by its phone',
      async () => {
        for (const p of live) {
          for (const where of ['server', 'dm'] as const) {
            const channel = channels.get(p)![where];
            if ((p.received.get(channel) ?? 0) !== (chat.published.get(channel) ?? 0)) return false;
          }
        }
        return (await pendingRows(pool, live)) === 0;
      },
      policy.rewakeAfterMs + slackMs,
    );
    expect(deliveries(fresh)).toBeGreaterThanOrEqual(1);
    for (const p of live) {
      const { status } = await temporal.workflow.getHandle(registrationWorkflowId(p.userId, p.deviceId)).describe();
      expect(status.name, `${p.name}'s workflow`).toBe('RUNNING');
    }
    expect(await countWedged(temporal, stack.taskQueue, 'registrationWorkflow')).toBe(0);
  } finally {
    const report = await watch.stop();
    console.log(`upgrade tier, from ${version.name}: ${report.requests} GET/PUT during the upgrade, ${report.serverErrors.length} 5xx`);
    expect(report.serverErrors).toEqual([]);
    expect(report.unanswered).toBe(0);
  }
}

async function fakeGoogle(): Promise<{ google: FakeGoogleOAuth & { account: ReturnType<typeof createServiceAccount> }; fcm: FakeFcm }> {
  const account = createServiceAccount('zippchat-upgrade');
  const oauth = await startGoogleOAuth({ account });
  const fcm = await startFakeFcm({ projectId: account.projectId, isAuthorized: (bearer) => oauth.isValid(bearer) });
  return { google: Object.assign(oauth, { account }), fcm };
}

const gateRow = z.object({
  transport: transportNameSchema,
  wake_outstanding: z.boolean(),
  last_wake_priority: z.enum(['normal', 'high']).nullable(),
  last_woken_at: z.date().nullable(),
  backoff_until: z.date().nullable(),
  fcm_budget_tat: z.date().nullable(),
  has_pending: z.boolean(),
  dm_pending: z.boolean(),
  test_wake_pending: z.boolean(),
});

/** The wake policy's verdict on the device as PostgreSQL holds it (null: no registration). */
async function verdictOf(pool: DatabasePool, policy: WakePolicy, p: Phone, now = Date.now()) {
  const row = await pool.maybeOne(sql.type(gateRow)`
    SELECT r.transport, r.wake_outstanding, r.last_wake_priority, r.last_woken_at, r.backoff_until, r.fcm_budget_tat,
           false AS test_wake_pending, -- no test wake in this tier; the releases before it have no such column
           EXISTS (SELECT 1 FROM push_pending p WHERE p.registration_id = r.id) AS has_pending,
           EXISTS (SELECT 1 FROM push_pending p WHERE p.registration_id = r.id AND p.is_dm) AS dm_pending
    FROM push_registrations r WHERE r.user_id = ${p.userId} AND r.device_id = ${p.deviceId}`);
  return row === null ? null : wakeVerdict(policy, snapshotOf(row), now);
}

async function heldByOutage(pool: DatabasePool, phones: readonly Phone[]): Promise<number> {
  return pool.oneFirst(sql.type(z.object({ held: z.number() }))`
    SELECT count(*)::int AS held FROM push_registrations
    WHERE backoff_origin IS NOT NULL AND device_id = ANY(${sql.array(
      phones.map((p) => p.deviceId),
      'text',
    )})`);
}

async function hasDm(pool: DatabasePool, p: Phone): Promise<boolean> {
  return pool.exists(sql.unsafe`
    SELECT 1 FROM push_pending pp JOIN push_registrations r ON r.id = pp.registration_id
    WHERE r.user_id = ${p.userId} AND r.device_id = ${p.deviceId} AND pp.is_dm`);
}

async function registrationExists(pool: DatabasePool, p: Phone): Promise<boolean> {
  return pool.exists(sql.unsafe`SELECT 1 FROM push_registrations WHERE user_id = ${p.userId} AND device_id = ${p.deviceId}`);
}

async function pendingRows(pool: DatabasePool, phones: readonly Phone[]): Promise<number> {
  return pool.oneFirst(sql.type(z.object({ rows: z.number() }))`
    SELECT count(*)::int AS rows FROM push_pending pp JOIN push_registrations r ON r.id = pp.registration_id
    WHERE r.device_id = ANY(${sql.array(
      phones.map((p) => p.deviceId),
      'text',
    )})`);
}

/** A built command line, as an operator runs it. */
function run(file: string, args: readonly string[], env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, [file, ...args], {
    env: { PATH: '/usr/local/bin:/usr/bin:/bin', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, output })));
}

/** A folder's golang-migrate up files, by version: `000033_push_recording_progress` and 33. */
function upFiles(dir: string): { label: string; version: number }[] {
  const found: { label: string; version: number }[] = [];
  for (const file of readdirSync(dir)) {
    const m = /^((\d{6})_\w+)\.up\.sql$/.exec(file);
    if (m !== null) found.push({ label: m[1]!, version: Number(m[2]) });
  }
  return found.sort((a, b) => a.version - b.version);
}

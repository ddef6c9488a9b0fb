/**
 * Item 9 — a busy server channel through FCM, the per-device wake budget off and on:
 * FCM requests per device and hour, wakes held back by the budget, and how long a DM sent in
 * the middle of the chatter takes to reach the phone.
 *
 * An hour of traffic per setting cannot run in real time inside `make bench`, so it runs on
 * Temporal's time-skipping test server, with the real registration workflow, the real claim and
 * send activities on the bench's PostgreSQL and the real FCM transport (OAuth token included)
 * posting to the local FCM stand-in. Every device drains each wake as soon as it sees it (one
 * 5 s step), a server-channel message arrives every 5 s, and each device gets a DM every
 * `dmEveryMs`. Times are workflow times: counts and latencies do not depend on the machine.
 *
 * FCM answers 200 to a throttled message and delays it, so the phone-side latency is modelled
 * from the requests we sent with FCM's published throttle (a burst of 20, one more every
 * 3 minutes; a newer collapsible wake replaces a delayed one).
 */
import proto from '@temporalio/proto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { sql } from 'slonik';
import { z } from 'zod';
import {
  buildWorker,
  createLogger,
  createTransports,
  customSearchAttributes,
  fcmWakesHeldBack,
  loadConfig,
  registrationWorkflowId,
  signalPending,
  signalRegistered,
  stateQuery,
} from '../../src/testing.js';
import { startFakeFcm, type FakeFcm } from '../../devstack/stand-ins/fcm.js';
import { workflowTaskInFlight } from '../../devstack/workflow-task.js';
import { createServiceAccount, startGoogleOAuth, type FakeGoogleOAuth } from '../../devstack/stand-ins/google-oauth.js';
import type { Report } from '../report.js';
import { seedUsers } from '../seed.js';
import type { BenchSettings } from '../settings.js';
import { setupProse } from '../setup-prose.js';
import type { BenchStack } from '../stack.js';
import { median, quantile, sum } from '../stats.js';

const stepMs = 5_000;
const minIntervalMs = 15_000;
/** FCM's published throttle of collapsible messages, per app and device. */
const fcmThrottle = { burst: 20, refillMs: 180_000 };
const budget = { burst: 20, refillMs: 180_000, dmReserve: 5 };

interface Device {
  readonly userId: string;
  readonly deviceId: string;
  readonly token: string;
}

interface Send {
  /** Claim time of the wake (workflow clock). */
  readonly at: number;
  readonly high: boolean;
}

interface RunResult {
  readonly hours: number;
  readonly sends: Map<string, Send[]>;
  /** DM posted at → the device's token. */
  readonly dms: Array<{ readonly token: string; readonly postedAt: number }>;
  readonly heldBack: number;
}

export async function measureFcmBudget(stack: BenchStack, report: Report, settings: BenchSettings): Promise<void> {
  const section = report.section('fcm-budget', '9. Busy channel through FCM: the wake budget off and on (time-skipping server)');
  const env = await TestWorkflowEnvironment.createTimeSkipping({
    server: { executable: { type: 'existing-path', path: stack.binaries.temporalTestServer } },
  });
  const account = createServiceAccount('zippchat-bench');
  let oauth: FakeGoogleOAuth | undefined;
  let fcm: FakeFcm | undefined;
  try {
    await env.connection.operatorService.addSearchAttributes({
      namespace: env.namespace ?? 'default',
      searchAttributes: Object.fromEntries(
        Object.keys(customSearchAttributes).map((name) => [name, proto.temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD]),
      ),
    });
    oauth = await startGoogleOAuth({ account });
    const google = oauth;
    fcm = await startFakeFcm({ projectId: account.projectId, isAuthorized: (bearer) => google.isValid(bearer) });
    const fcmEnv = { FCM_PROJECT_ID: account.projectId, FCM_CREDENTIALS_JSON: account.keyFile(oauth.url), FCM_ENDPOINT: fcm.url };
    const off = await busyHour(env, stack, fcm, settings, { ...fcmEnv, PUSH_FCM_WAKE_BURST: '0' }, 'off');
    const on = await busyHour(
      env,
      stack,
      fcm,
      settings,
      {
        ...fcmEnv,
        PUSH_FCM_WAKE_BURST: String(budget.burst),
        PUSH_FCM_WAKE_REFILL_MS: String(budget.refillMs),
        PUSH_FCM_DM_RESERVE: String(budget.dmReserve),
      },
      'on',
    );
    reportResults(report, section, settings, off, on);
  } finally {
    await fcm?.close();
    await oauth?.close();
    await env.teardown();
  }
}

async function busyHour(
  env: TestWorkflowEnvironment,
  stack: BenchStack,
  fcm: FakeFcm,
  settings: BenchSettings,
  workerEnv: Record<string, string>,
  label: string,
): Promise<RunResult> {
  const { devices: count, durationMs, dmEveryMs } = settings.fcmBudget;
  const taskQueue = `bench-fcm-budget-${label}-${Date.now()}`;
  const config = loadConfig('worker', { DATABASE_URL: stack.databaseUrl, ...workerEnv });
  const log = createLogger({ level: 'silent', name: 'bench-fcm-budget' });
  const transports = createTransports(config, log);
  const client = env.client;
  const worker: Worker = await buildWorker({
    connection: env.nativeConnection,
    namespace: env.namespace ?? 'default',
    taskQueue,
    pool: stack.pool,
    log,
    policy: config.wakePolicy,
    transports,
    temporal: client,
    overrides: { maxCachedWorkflows: 50 },
  });
  const running = worker.run();
  const userIds = await seedUsers(stack.pool, count);
  const devices: Device[] = userIds.map((userId) => ({ userId, deviceId: 'phone', token: `bench-fcm-${label}-${userId}:APA91b${'x'.repeat(100)}` }));
  const heldBefore = sum((await fcmWakesHeldBack.get()).values.map((v) => v.value));
  const sends = new Map<string, Send[]>(devices.map((d) => [d.token, []]));
  const dms: RunResult['dms'] = [];
  try {
    await stack.pool.query(sql.unsafe`
      INSERT INTO push_registrations (user_id, device_id, transport, token)
      SELECT u.id, 'phone', 'fcm', u.token
      FROM unnest(${sql.array(userIds, 'int8')}, ${sql.array(
        devices.map((d) => d.token),
        'text',
      )}) AS u(id, token)`);
    for (const d of devices) await signalRegistered(client, taskQueue, d, 'fcm');
    const start = await env.currentTimeMs();
    const seen = new Map<string, number>(devices.map((d) => [d.token, 0]));
    let messageId = 1;
    for (let elapsed = 0; elapsed < durationMs; elapsed += stepMs) {
      for (const d of devices) {
        const requests = fcm.received.filter((r) => r.token === d.token);
        if (requests.length === seen.get(d.token)) continue;
        const at = (await lastWokenAt(stack, d))!;
        for (const r of requests.slice(seen.get(d.token))) sends.get(d.token)!.push({ at, high: r.priority === 'HIGH' });
        seen.set(d.token, requests.length);
        await drain(stack, client, d);
      }
      for (const [i, d] of devices.entries()) {
        // DMs staggered across devices, one per device every dmEveryMs, from minute 10 on
        // (the budget's initial burst is long spent by then).
        const offset = 10 * 60_000 + Math.round((i * dmEveryMs) / devices.length);
        if (elapsed >= offset && (elapsed - offset) % dmEveryMs === 0) {
          dms.push({ token: d.token, postedAt: await env.currentTimeMs() });
          await message(stack, client, taskQueue, d, 20, true, messageId++);
        }
        await message(stack, client, taskQueue, d, 10, false, messageId++);
      }
      await skip(env, devices, stepMs);
    }
    return {
      hours: ((await env.currentTimeMs()) - start) / 3_600_000,
      sends,
      dms,
      heldBack: sum((await fcmWakesHeldBack.get()).values.map((v) => v.value)) - heldBefore,
    };
  } finally {
    for (const d of devices)
      await client.workflow
        .getHandle(registrationWorkflowId(d.userId, d.deviceId))
        .terminate('benchmark done')
        .catch(() => undefined);
    worker.shutdown();
    await running;
    await transports.close();
    await stack.pool.query(sql.unsafe`DELETE FROM push_registrations WHERE user_id = ANY(${sql.array(userIds, 'int8')})`);
  }
}

async function lastWokenAt(stack: BenchStack, d: Device): Promise<number | undefined> {
  const at = await stack.pool.maybeOneFirst(sql.type(z.object({ at: z.date().nullable() }))`
    SELECT last_woken_at AS at FROM push_registrations WHERE user_id = ${d.userId} AND device_id = ${d.deviceId}`);
  return at?.getTime();
}

/** A message in `channel` for the device, as the bridge records and signals it. */
async function message(
  stack: BenchStack,
  client: TestWorkflowEnvironment['client'],
  taskQueue: string,
  d: Device,
  channel: number,
  isDm: boolean,
  id: number,
): Promise<void> {
  const created = await stack.pool.maybeOneFirst(sql.type(z.object({ created: z.boolean() }))`
    INSERT INTO push_pending (registration_id, channel_id, message_count, first_message_id, first_at, last_message_id, is_dm)
    SELECT id, ${channel}, 1, ${id}, now(), ${id}, ${isDm} FROM push_registrations WHERE user_id = ${d.userId} AND device_id = ${d.deviceId}
    ON CONFLICT (registration_id, channel_id) DO UPDATE
      SET message_count = push_pending.message_count + 1, last_message_id = excluded.last_message_id, last_at = now()
    RETURNING (xmax = 0) AS created`);
  if (created === true) await signalPending(client, taskQueue, d, 'fcm');
}

/** The device drains, as `POST /api/push/drain` does. */
async function drain(stack: BenchStack, client: TestWorkflowEnvironment['client'], d: Device): Promise<void> {
  await stack.pool.transaction(async (tx) => {
    await tx.query(sql.unsafe`UPDATE push_registrations SET wake_outstanding = false WHERE user_id = ${d.userId} AND device_id = ${d.deviceId}`);
    await tx.query(
      sql.unsafe`DELETE FROM push_pending p USING push_registrations r WHERE p.registration_id = r.id AND r.user_id = ${d.userId} AND r.device_id = ${d.deviceId}`,
    );
  });
}

/**
 * Lets workflow time pass the way the workflow tests do (test/support/workflow-harness.ts):
 * never under a workflow task in flight, and on past a timer about to fire, because the
 * time-skipping server strands a task that cancels a timer which fired while it ran.
 */
async function skip(env: TestWorkflowEnvironment, devices: readonly Device[], ms: number): Promise<void> {
  await settle(env, devices);
  await env.sleep(ms);
  for (let round = 0; round < 10; round++) {
    await settle(env, devices);
    const now = await env.currentTimeMs();
    let due = 0;
    for (const d of devices) {
      const next = (await env.client.workflow.getHandle(registrationWorkflowId(d.userId, d.deviceId)).query(stateQuery)).nextTimer;
      const at = next === null ? undefined : Date.parse(next.at);
      if (at !== undefined && at > now - 500 && at <= now + 500) due = Math.max(due, at);
    }
    if (due === 0) return;
    await env.sleep(Math.max(0, due - now) + 500);
  }
}

async function settle(env: TestWorkflowEnvironment, devices: readonly Device[]): Promise<void> {
  for (const d of devices) {
    const handle = env.client.workflow.getHandle(registrationWorkflowId(d.userId, d.deviceId));
    for (let i = 0; i < 400; i++) {
      if (!(await workflowTaskInFlight(handle))) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

/**
 * When each send reaches the phone under FCM's throttle: at once while the bucket has a token,
 * else when it refills — and a newer wake sent meanwhile replaces the delayed one (collapse_key),
 * arriving with it.
 */
export function fcmDeliveries(sends: readonly Send[]): number[] {
  let tat = -Infinity;
  let waitingUntil: number | undefined;
  const delivered: number[] = [];
  const { burst, refillMs } = fcmThrottle;
  for (const send of sends) {
    if (waitingUntil !== undefined && send.at < waitingUntil) {
      delivered.push(waitingUntil); // collapses into the delayed wake
      continue;
    }
    if (waitingUntil !== undefined) waitingUntil = undefined;
    const spent = Math.max(tat, send.at) + refillMs;
    if (spent - send.at <= burst * refillMs) {
      tat = spent;
      delivered.push(send.at);
    } else {
      waitingUntil = tat + refillMs - burst * refillMs;
      tat = Math.max(tat, waitingUntil) + refillMs;
      delivered.push(waitingUntil);
    }
  }
  return delivered;
}

/** For each DM: from its posting to the first wake sent after it reaching the phone (modelled), and to that wake's send. */
function dmLatencies(run: RunResult): { sent: number[]; atPhone: number[] } {
  const sent: number[] = [];
  const atPhone: number[] = [];
  for (const dm of run.dms) {
    const sends = run.sends.get(dm.token)!;
    const deliveries = fcmDeliveries(sends);
    const i = sends.findIndex((s) => s.at >= dm.postedAt && s.high);
    if (i < 0) continue;
    sent.push(sends[i]!.at - dm.postedAt);
    atPhone.push(deliveries[i]! - dm.postedAt);
  }
  return { sent, atPhone };
}

function reportResults(report: Report, section: ReturnType<Report['section']>, settings: BenchSettings, off: RunResult, on: RunResult): void {
  const perHour = (run: RunResult, pick: (s: Send) => boolean) => [...run.sends.values()].map((s) => s.filter(pick).length / run.hours);
  const requests = (run: RunResult) => median(perHour(run, () => true));
  const normal = (run: RunResult) => median(perHour(run, (s) => !s.high));
  const delayedByFcm = (run: RunResult) =>
    median([...run.sends.values()].map((s) => fcmDeliveries(s).filter((at, i) => at > s[i]!.at).length / run.hours));
  const dmOff = dmLatencies(off);
  const dmOn = dmLatencies(on);
  const headline = '9. FCM budget';
  report.figure(section, {
    name: 'FCM requests per device per hour, budget on',
    value: requests(on),
    unit: '/h',
    reference: { name: 'budget off', value: requests(off) },
    headline,
  });
  // burst − reserve at once, then one per refill: per hour of this run's length.
  const allowance = (budget.burst - budget.dmReserve + (on.hours * 3_600_000) / budget.refillMs) / on.hours;
  report.figure(section, {
    name: 'server-channel (NORMAL) wakes per device per hour, budget on',
    value: normal(on),
    unit: '/h',
    reference: {
      name: `the budget's allowance over ${Math.round(on.hours * 60)} min: (burst − reserve + elapsed ÷ refill) per hour`,
      value: allowance,
    },
  });
  report.figure(section, {
    name: 'requests FCM would delay (its throttle, modelled) per device per hour, budget on',
    value: delayedByFcm(on),
    unit: '/h',
    reference: { name: 'budget off', value: delayedByFcm(off) },
  });
  report.figure(section, {
    name: 'claims held back by the budget per device per hour',
    value: on.heldBack / settings.fcmBudget.devices / on.hours,
    unit: '/h',
  });
  report.figure(section, {
    name: 'DM → its HIGH wake sent, max (workflow time)',
    value: Math.max(...dmOn.sent) / 1000,
    unit: 's',
    reference: { name: 'budget off', value: Math.max(...dmOff.sent) / 1000 },
    note: `${dmOn.sent.length} DMs; the design's interval is ${minIntervalMs / 1000} s`,
  });
  report.figure(section, {
    name: "DM → wake on the phone through FCM's throttle (modelled), p50",
    value: median(dmOn.atPhone) / 1000,
    unit: 's',
    reference: { name: 'budget off', value: median(dmOff.atPhone) / 1000 },
    headline,
  });
  report.figure(section, {
    name: "DM → wake on the phone through FCM's throttle (modelled), max",
    value: Math.max(...dmOn.atPhone) / 1000,
    unit: 's',
    reference: { name: 'budget off', value: Math.max(...dmOff.atPhone) / 1000 },
    headline,
  });
  section.details.dmLatenciesMs = { on: dmOn, off: dmOff };
  section.details.quantiles = { dmAtPhoneP95On: quantile(dmOn.atPhone, 0.95), dmAtPhoneP95Off: quantile(dmOff.atPhone, 0.95) };
  section.setup.push(
    setupProse('fcm-budget', {
      devices: settings.fcmBudget.devices,
      minutes: Math.round(settings.fcmBudget.durationMs / 60_000),
      dmEveryMinutes: settings.fcmBudget.dmEveryMs / 60_000,
    }),
  );
}

/**
 * One fault scenario, end to end, on a private stack (test/support/fault-stack.ts) with two
 * replicas of the api, the worker and the bridge:
 *
 *   1. seed a host world, install the audit triggers, start the phones behind the fake
 *      distributor and register every device through the api (UnifiedPush, RFC 8291 keys);
 *   2. publish MESSAGE_CREATE events to JetStream (as the chat server does: with a message id
 *      for de-duplication, republished until acknowledged) while the scenario's faults run at
 *      seeded points of the fan-out — the phones drain every wake all along;
 *   3. once every process and service is back, wait (bounded polling) until every event is
 *      recorded, nothing is pending, every phone is idle and every device's workflow holds no
 *      timer — a device left with pending rows and no wake fails here, with a report of it;
 *   4. judge (verdict.ts) and print the figures.
 *
 * The maintenance Schedule is paused: its healing is a safety net with tests of its own
 * (test/integration/maintenance.test.ts), and here every device must be woken by the primary
 * paths — signals, JetStream redelivery, retried workflow tasks and the re-wake timer.
 */
import { Client, Connection } from '@temporalio/client';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { createDatabasePool } from '../../src/db/pool.js';
import { waitFor } from '../../devstack/daemons.js';
import { deviceApi } from '../../simulator/api-client.js';
import { maintenanceScheduleId, registrationWorkflowId } from '../../temporal/names.js';
import { stateQuery } from '../../temporal/registration-messages.js';
import type { FaultStack } from '../support/fault-stack.js';
import { nextId } from '../support/host-fixtures.js';
import { claimListener, installAudit, readAudit, type ClaimListener } from './audit.js';
import { startPhones, type PhoneFleet } from './phones.js';
import type { Random } from './random.js';
import { judge, type Verdict } from './verdict.js';
import { expectedCounts, seedWorld, type MessageEventBody, type World } from './world.js';

/**
 * Small, so that healing timers fire within seconds (real time on the dev server) — but the
 * re-wake longer than a workflow task's retry after its worker died (the 10 s task timeout and
 * a little): as in production (15 min), a claim lost with its worker must be sent by the
 * retried task, not superseded by a re-wake, or the verdict could not tell the two apart.
 */
export const minIntervalMs = 2_000;
export const rewakeAfterMs = 25_000;

export const scenarioEnv: Readonly<Record<string, string>> = {
  PUSH_MIN_INTERVAL_MS: String(minIntervalMs),
  PUSH_REWAKE_AFTER_MS: String(rewakeAfterMs),
  PUSH_UP_ALLOW_PRIVATE: 'true',
  PUSH_UP_ALLOW_HTTP: 'true',
  LOG_LEVEL: 'info',
};

export interface Fault {
  /** Runs when this many events have been published. */
  readonly atEvent: number;
  readonly label: string;
  /** A worker killed or the Temporal server stopped: a workflow task in flight may be lost (and retried). */
  readonly losesWorkflowTasks: boolean;
  /**
   * Injects the fault (calling `striking` at the moment it does) and repairs it (restart),
   * returning once repaired, with what it did when that was decided on the spot.
   */
  run(striking: () => void): Promise<string | void>;
}

export interface FaultHooks {
  /**
   * Resolves when the next claim commits, with the name of the process sending its wake
   * (`worker-1`…), or undefined when no claim came within 5 s (the fan-out is over).
   */
  nextClaim(): Promise<string | undefined>;
}

export interface ScenarioOptions {
  readonly stack: FaultStack;
  readonly random: Random;
  readonly users: number;
  readonly events: number;
  /** Pause between two publishes (ms), drawn from this range. */
  readonly paceMs: readonly [number, number];
  readonly faults: (random: Random, hooks: FaultHooks) => readonly Fault[];
}

export interface ScenarioResult {
  readonly verdict: Verdict;
  readonly events: number;
  readonly devices: number;
  readonly faults: readonly string[];
  readonly report: string;
}

export async function runScenario(options: ScenarioOptions): Promise<ScenarioResult> {
  const { stack, random } = options;
  const pool = await createDatabasePool(stack.databaseUrl, { maximumPoolSize: 4 });
  const connection = await Connection.connect(stack.temporalConnection);
  const temporal = new Client({ connection });
  const nc = await connect({ servers: stack.natsUrl, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  const apiUrls = stack.appsOf('api').map((a) => a.url);
  let phones: PhoneFleet | undefined;
  let claims: ClaimListener | undefined;
  try {
    await temporal.schedule.getHandle(maintenanceScheduleId).pause('faults tier: devices must be woken by the primary paths');
    await installAudit(pool);
    claims = await claimListener(stack.databaseUrl);
    const world = await seedWorld(pool, random, options.users);
    phones = await startPhones(world.devices, () => apiUrls);
    for (const [i, phone] of phones.phones.entries()) {
      await deviceApi(apiUrls[i % apiUrls.length]!, phone.jwt).register({
        transport: 'unifiedpush',
        token: phone.endpoint,
        p256dh: phone.keys.p256dh.toString('base64url'),
        auth: phone.keys.auth.toString('base64url'),
      });
    }
    const registrationOf = await registrations(pool);

    const events = await fanOutWithFaults(options, world, nc, claims);
    for (const app of stack.apps) await stack.waitReady(app.name);
    await converge(pool, temporal, phones, world, events, registrationOf);

    const verdict = judge({
      phones: phones.phones,
      registrationOf,
      audit: await readAudit(pool),
      expected: expectedCounts(world, events.published),
      taskLossesAt: events.taskLossesAt,
      minIntervalMs,
      rewakeAfterMs,
    });
    const problems = phones.distributor.problems;
    const violations =
      problems.length > 0 ? [...verdict.violations, `distributor: ${problems.length} malformed wakes, first: ${problems[0]}`] : verdict.violations;
    return {
      verdict: { ...verdict, violations },
      events: events.published.length,
      devices: world.devices.length,
      faults: events.faults,
      report: report(random.seed, world, events, verdict),
    };
  } finally {
    await phones?.close();
    await claims?.close();
    await nc.close().catch(() => undefined);
    await connection.close().catch(() => undefined);
    await pool.end();
  }
}

interface FanOut {
  readonly published: readonly MessageEventBody[];
  /** Each fault, as run: label and how long the repair took. */
  readonly faults: readonly string[];
  /** When each fault that may lose workflow tasks began. */
  readonly taskLossesAt: readonly number[];
  readonly durationMs: number;
}

/** Publishes the events at a seeded pace; the faults run one after another at their events. */
async function fanOutWithFaults(options: ScenarioOptions, world: World, nc: NatsConnection, claims: ClaimListener): Promise<FanOut> {
  const { random } = options;
  const channels = [...world.channels.keys()];
  const js = jetstream(nc);
  const published: MessageEventBody[] = [];
  const waiters: Array<{ count: number; resolve: () => void }> = [];
  const reached = (count: number) => new Promise<void>((resolve) => (published.length >= count ? resolve() : waiters.push({ count, resolve })));
  const started = Date.now();
  const ran: string[] = [];
  const taskLossesAt: number[] = [];
  const faults = (async () => {
    // No claim within 5 s (the fan-out is over and every device idle): strike anyway.
    const nextClaim = () => Promise.race([claims.nextClaim(), new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 5_000))]);
    for (const fault of options.faults(random, { nextClaim })) {
      await reached(fault.atEvent);
      const t0 = Date.now();
      const done = await fault.run(() => {
        if (fault.losesWorkflowTasks) taskLossesAt.push(Date.now());
      });
      ran.push(`${done ?? fault.label} at event ${fault.atEvent} (back after ${Date.now() - t0} ms)`);
    }
  })();
  // Plan the messages up front so that the seed alone decides them.
  const plan = Array.from({ length: options.events }, () => {
    const channel = random.pick(channels);
    return { channel, author: random.pick(world.channels.get(channel)!), pause: random.int(options.paceMs[0], options.paceMs[1]) };
  });
  for (const { channel, author, pause } of plan) {
    const event: MessageEventBody = { id: nextId(), channel_id: channel, author_id: author, created_at: new Date().toISOString() };
    await publishUntilAcknowledged(js, event);
    published.push(event);
    for (const waiter of waiters.filter((w) => published.length >= w.count)) {
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
    await new Promise((resolve) => setTimeout(resolve, pause)); // load shape, not synchronisation
  }
  for (const waiter of waiters.splice(0)) waiter.resolve();
  await faults;
  return { published, faults: ran, taskLossesAt, durationMs: Date.now() - started };
}

/** As the chat server publishes: with `Nats-Msg-Id`, again until JetStream acknowledges (NATS may be restarting). */
async function publishUntilAcknowledged(js: JetStreamClient, event: MessageEventBody): Promise<void> {
  await waitFor(
    `JetStream to acknowledge message ${event.id}`,
    async () => {
      await js.publish(`channel.${event.channel_id}.MESSAGE_CREATE`, JSON.stringify(event), { msgID: event.id, timeout: 2_000 });
      return true;
    },
    60_000,
  );
}

async function registrations(pool: DatabasePool): Promise<Map<string, string>> {
  const rows = await pool.any(sql.type(z.object({ user_id: z.string(), id: z.string() }))`SELECT user_id, id FROM push_registrations`);
  return new Map(rows.map((r) => [r.user_id, r.id]));
}

/**
 * Every event recorded, nothing pending, every phone idle and every workflow idle (no wake
 * outstanding in its belief, no timer): after that no wake can come without a new signal.
 */
async function converge(
  pool: DatabasePool,
  temporal: Client,
  phones: PhoneFleet,
  world: World,
  events: FanOut,
  registrationOf: ReadonlyMap<string, string>,
): Promise<void> {
  const ids = events.published.map((e) => e.id);
  await waitFor(
    'the bridges to record every published event',
    async () =>
      (await pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int4 AS n FROM push_processed_events WHERE message_id = ANY(${sql.array(ids, 'int8')})`)) === ids.length,
    120_000,
  ).catch(async (error: unknown) => {
    throw new Error(`${(error as Error).message}\n${await stuckReport(pool, temporal, phones, world, registrationOf)}`);
  });
  await waitFor(
    'every device woken and drained, every workflow idle',
    async () => {
      const pending = await pool.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int4 AS n FROM push_pending`);
      if (pending > 0 || !phones.idle()) return false;
      const states = await Promise.all(
        world.devices.map((d) => temporal.workflow.getHandle(registrationWorkflowId(d.userId, d.deviceId)).query(stateQuery)),
      );
      return states.every((s) => !s.outstanding && !s.checkRequested && s.nextTimer === null);
    },
    90_000,
  ).catch(async (error: unknown) => {
    throw new Error(`${(error as Error).message}\n${await stuckReport(pool, temporal, phones, world, registrationOf)}`);
  });
}

/** Devices with pending rows, with what PostgreSQL, the phone and the workflow say about each. */
async function stuckReport(
  pool: DatabasePool,
  temporal: Client,
  phones: PhoneFleet,
  world: World,
  registrationOf: ReadonlyMap<string, string>,
): Promise<string> {
  const rows = await pool.any(sql.type(
    z.object({ registration_id: z.string(), rows: z.number(), messages: z.number(), outstanding: z.boolean(), last_woken_at: z.date().nullable() }),
  )`
    SELECT p.registration_id, count(*)::int4 AS rows, sum(p.message_count)::int4 AS messages, r.wake_outstanding AS outstanding, r.last_woken_at
    FROM push_pending p JOIN push_registrations r ON r.id = p.registration_id
    GROUP BY p.registration_id, r.wake_outstanding, r.last_woken_at`);
  const lines = [`${rows.length} device(s) with pending rows:`];
  for (const row of rows) {
    const device = world.devices.find((d) => registrationOf.get(d.userId) === row.registration_id);
    const phone = phones.phones.find((p) => p.userId === device?.userId);
    const state =
      device === undefined
        ? undefined
        : await temporal.workflow
            .getHandle(registrationWorkflowId(device.userId, device.deviceId))
            .query(stateQuery)
            .catch((e: unknown) => String(e));
    lines.push(
      `  ${device?.deviceId}: ${row.rows} row(s), ${row.messages} message(s); wake_outstanding=${row.outstanding}, last_woken_at=${row.last_woken_at?.toISOString()}; ` +
        `phone: ${phone?.wakes.length} wake(s), last ${phone?.wakes.at(-1) === undefined ? '-' : new Date(phone.wakes.at(-1)!).toISOString()}, idle=${phone?.idle()}; workflow: ${JSON.stringify(state)}`,
    );
  }
  const busy = phones.phones.filter((p) => !p.idle()).map((p) => p.deviceId);
  if (busy.length > 0) lines.push(`phones still draining: ${busy.join(', ')}`);
  return lines.join('\n');
}

function report(seed: number, world: World, events: FanOut, v: Verdict): string {
  return [
    `seed ${seed} (replay: FAULTS_SEED=${seed})`,
    `${world.devices.length} devices, ${events.published.length} events published in ${events.durationMs} ms`,
    ...events.faults.map((f) => `  fault: ${f}`),
    `messages: ${v.messagesExpected} expected per-device counts, ${v.messagesDrained} drained from push_pending, ${v.messagesReceived} returned to phones` +
      (v.answerlessDrains > 0
        ? ` (${v.answerlessDrains} drain attempt(s) lost their connection; ${v.lostAnswers} message(s) drained but unanswered)`
        : ''),
    `wakes: ${v.wakes} received for ${v.claims} claims`,
    `duplicates: ${v.resends + v.rewakeDuplicates} — ${v.resends} re-send(s) after a lost workflow task (allowed ${v.resendBound}), ` +
      `${v.rewakeDuplicates} re-wake(s) of a delivered undrained wake (allowed ${v.rewakeBound})`,
    `${v.closeArrivals} arrival(s) closer than ${minIntervalMs} ms to the previous (closest ${v.closestArrivalMs} ms): late sends of their own claims`,
  ].join('\n');
}

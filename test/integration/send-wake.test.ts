/**
 * The send activity against real PostgreSQL: what it records for each outcome. At the edge
 * the fault tests found, what it does after the provider accepted the wake must not fail it,
 * or Temporal retries the activity and the device gets the wake twice. A wake that did not go
 * through releases its claim with a back-off: counted toward the ten only
 * when the endpoint's own, Retry-After honoured, the FCM budget given back; a configuration
 * error of ours releases it too, with a back-off of its own that counts nothing.
 */
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { messageToWake, wakes } from '../../activities/metrics.js';
import { createRegistrationActivities } from '../../activities/registration.js';
import { maxConsecutiveFailures, misconfiguredMaxMs, misconfiguredOrigin, misconfiguredRetryMs } from '../../domain/backoff.js';
import { upsertRegistration } from '../../src/api/registration-store.js';
import { createDatabasePool } from '../../src/db/pool.js';
import { createLogger } from '../../src/observability/log.js';
import type { DeliveryOutcome, WakeSender } from '../../src/transports/types.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import type { TransportName } from '../../domain/vocabulary.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await freshDatabase();
  await db.pool.query(sql.unsafe`INSERT INTO users (id, username) VALUES (1, 'alice')`);
});
afterAll(async () => {
  await db.drop();
});

async function registration(failures: number): Promise<string> {
  return db.pool.oneFirst(sql.type(z.object({ id: z.string() }))`
    INSERT INTO push_registrations (user_id, device_id, transport, token, failures)
    VALUES (1, ${`phone-${failures}`}, 'unifiedpush', 'https://up.example/x', ${failures}) RETURNING id`);
}

function activitiesWith(pool: Parameters<typeof createRegistrationActivities>[0]['pool'], send: WakeSender['send']) {
  return createRegistrationActivities({
    pool,
    log: createLogger({ level: 'silent', name: 'test' }),
    policy: { minIntervalMs: 15_000, rewakeAfterMs: 900_000, fcmBudget: { burst: 20, refillMs: 180_000, dmReserve: 5 } },
    transports: { send },
  });
}

describe('sendWake after a delivery', () => {
  it('resets the failure count', async () => {
    const id = await registration(3);
    const { sendWake } = activitiesWith(db.pool, async () => ({ kind: 'delivered' }));
    expect(await sendWake({ registrationId: id, userId: '1', deviceId: 'phone-3', priority: 'normal' })).toEqual({ kind: 'delivered' });
    expect(await db.pool.oneFirst(sql.type(z.object({ failures: z.number() }))`SELECT failures FROM push_registrations WHERE id = ${id}`)).toBe(0);
  });

  it('reports the wake delivered when PostgreSQL goes away right after the provider accepted it', async () => {
    const id = await registration(4);
    const pool = await createDatabasePool(db.url, { maximumPoolSize: 1 });
    let sent = 0;
    const { sendWake } = activitiesWith(pool, async () => {
      sent++;
      await pool.end(); // the database is gone before the bookkeeping
      return { kind: 'delivered' };
    });
    await expect(sendWake({ registrationId: id, userId: '1', deviceId: 'phone-4', priority: 'normal' })).resolves.toEqual({ kind: 'delivered' });
    expect(sent).toBe(1);
  });
});

describe('the message → wake latency', () => {
  /** The histogram's count and sum for one priority. */
  async function observed(priority: 'high' | 'normal'): Promise<{ count: number; sum: number }> {
    const values = (await messageToWake.get()).values.filter((v) => v.labels.priority === priority);
    const pick = (name: string) => values.find((v) => v.metricName === `push_message_to_wake_seconds_${name}`)?.value ?? 0;
    return { count: pick('count'), sum: pick('sum') };
  }

  it("is observed when the first wake for a message is delivered, from the message's created_at, by priority", async () => {
    const id = await registration(0).then(async () =>
      db.pool.oneFirst(sql.type(z.object({ id: z.string() }))`SELECT id FROM push_registrations WHERE device_id = 'phone-0'`),
    );
    // A DM created 3 s ago (its event's created_at), and a server-channel message a minute ago.
    await db.pool.query(sql.unsafe`
      INSERT INTO push_pending (registration_id, channel_id, message_count, first_message_id, first_at, last_message_id, is_dm)
      VALUES (${id}, 20, 1, 2, now() - interval '3 seconds', 2, true), (${id}, 10, 1, 1, now() - interval '60 seconds', 1, false)`);
    const activities = activitiesWith(db.pool, async () => ({ kind: 'delivered' }));
    const before = await observed('high');
    const now = Date.now();
    const claim = await activities.claimWake({ userId: '1', deviceId: 'phone-0', now });
    expect(claim).toMatchObject({ status: 'claimed', priority: 'high' });
    const messageAt = claim.status === 'claimed' ? claim.messageAt : undefined;
    await activities.sendWake({
      registrationId: id,
      userId: '1',
      deviceId: 'phone-0',
      priority: 'high',
      now,
      ...(messageAt === undefined ? {} : { messageAt }),
    });
    const after = await observed('high');
    expect(after.count - before.count).toBe(1);
    // From the DM's own created_at (3 s), not the older server-channel message's (60 s).
    expect(after.sum - before.sum).toBeGreaterThanOrEqual(3);
    expect(after.sum - before.sum).toBeLessThan(60);

    // The re-wake of that undrained wake is for no new message: nothing observed.
    const rewake = await activities.claimWake({ userId: '1', deviceId: 'phone-0', now: now + 900_000 });
    expect(rewake).toMatchObject({ status: 'claimed' });
    expect(rewake.status === 'claimed' && rewake.messageAt).toBeFalsy();
  });
});

const t0 = Date.parse('2026-12-01T10:00:00.000Z');
let nextDevice = 1;

/** A registration whose wake was just claimed at t0 (outstanding), with a pending row. */
async function claimed(
  transport: TransportName = 'unifiedpush',
  extra: { failures?: number; budgetTat?: number } = {},
): Promise<{ id: string; deviceId: string }> {
  const deviceId = `claimed-${nextDevice++}`;
  const token = transport === 'fcm' ? `fcm-token-${deviceId}` : `https://up.example/${deviceId}`;
  const id = await db.pool.oneFirst(sql.type(z.object({ id: z.string() }))`
    INSERT INTO push_registrations (user_id, device_id, transport, token, failures, wake_outstanding, last_woken_at, fcm_budget_tat)
    VALUES (1, ${deviceId}, ${transport}, ${token}, ${extra.failures ?? 0}, true, ${new Date(t0).toISOString()},
            ${extra.budgetTat === undefined ? null : new Date(extra.budgetTat).toISOString()})
    RETURNING id`);
  await db.pool.query(sql.unsafe`
    INSERT INTO push_pending (registration_id, channel_id, message_count, first_message_id, first_at, last_message_id, is_dm)
    VALUES (${id}, 10, 1, 1, now(), 1, false)`);
  return { id, deviceId };
}

const stateRow = z.object({
  wake_outstanding: z.boolean(),
  failures: z.number(),
  backoff_until: z.date().nullable(),
  backoff_count: z.number(),
  backoff_reason: z.string().nullable(),
  backoff_origin: z.string().nullable(),
  backoff_cause: z.string().nullable(),
  fcm_budget_tat: z.date().nullable(),
});

async function state(id: string) {
  return db.pool.maybeOne(sql.type(stateRow)`
    SELECT wake_outstanding, failures, backoff_until, backoff_count, backoff_reason, backoff_origin, backoff_cause, fcm_budget_tat FROM push_registrations WHERE id = ${id}`);
}

const answering = (outcome: DeliveryOutcome) => activitiesWith(db.pool, async () => outcome);
const send = (activities: ReturnType<typeof activitiesWith>, device: { id: string; deviceId: string }, now = t0) =>
  activities.sendWake({ registrationId: device.id, userId: '1', deviceId: device.deviceId, priority: 'normal', now });

describe('sendWake when the wake did not go through', () => {
  it("releases the claim, counts an endpoint's own failure, and backs off on a growing scale", async () => {
    const device = await claimed();
    const failing = answering({ kind: 'deferred', cause: 'failing', reason: 'UnifiedPush 503', counts: true });
    expect(await send(failing, device)).toEqual({ kind: 'deferred', cause: 'failing', reason: 'UnifiedPush 503', until: t0 + 10_000 });
    expect(await state(device.id)).toMatchObject({
      wake_outstanding: false,
      failures: 1,
      backoff_count: 1,
      backoff_reason: 'UnifiedPush 503',
      backoff_origin: null,
      backoff_until: new Date(t0 + 10_000),
    });
    expect(await send(failing, device, t0 + 60_000)).toMatchObject({ until: t0 + 60_000 + 20_000 });
    expect(await send(failing, device, t0 + 120_000)).toMatchObject({ until: t0 + 120_000 + 40_000 });
    // A Retry-After asks for at least its delay.
    const longer = answering({ kind: 'deferred', cause: 'failing', reason: 'UnifiedPush 503', counts: true, until: t0 + 200_000 + 300_000 });
    expect(await send(longer, device, t0 + 200_000)).toMatchObject({ until: t0 + 200_000 + 300_000 });
    expect((await state(device.id))?.failures).toBe(4);
  });

  it('prunes at the tenth counted failure', async () => {
    const device = await claimed('unifiedpush', { failures: maxConsecutiveFailures - 1 });
    const failing = answering({ kind: 'deferred', cause: 'failing', reason: 'UnifiedPush 503', counts: true });
    expect(await send(failing, device)).toEqual({ kind: 'dead', reason: '10 consecutive failures of the endpoint (last: UnifiedPush 503)' });
    expect(await state(device.id)).toBeNull();
  });

  it('never counts a rate limit, and waits exactly its Retry-After (or a growing back-off from a minute)', async () => {
    const device = await claimed('unifiedpush', { failures: 9 });
    for (let i = 0; i < 12; i++) {
      const now = t0 + i * 600_000;
      const limited = answering({
        kind: 'deferred',
        cause: 'rate_limited',
        reason: 'UnifiedPush 429: rate limited',
        counts: false,
        until: now + 600_000,
      });
      expect(await send(limited, device, now)).toMatchObject({ kind: 'deferred', cause: 'rate_limited', until: now + 600_000 });
    }
    expect(await state(device.id)).toMatchObject({ failures: 9, backoff_count: 12 });
    const other = await claimed();
    const noRetryAfter = answering({ kind: 'deferred', cause: 'rate_limited', reason: 'UnifiedPush 429: rate limited', counts: false });
    const delays = [];
    for (let i = 0; i < 6; i++) delays.push(((await send(noRetryAfter, other, t0)) as { until: number }).until - t0);
    expect(delays).toEqual([60_000, 120_000, 240_000, 480_000, 900_000, 900_000]); // capped at the re-wake interval
    expect((await state(other.id))?.failures).toBe(0);
  });

  it('remembers the origin of an outage, so that its end wakes the device, and counts nothing', async () => {
    const device = await claimed();
    const held = answering({
      kind: 'deferred',
      cause: 'outage',
      reason: 'unifiedpush outage: held back',
      counts: false,
      origin: 'unifiedpush https://up.example',
    });
    expect(await send(held, device)).toMatchObject({ kind: 'deferred', cause: 'outage', until: t0 + 30_000 });
    expect(await state(device.id)).toMatchObject({ failures: 0, backoff_origin: 'unifiedpush https://up.example', wake_outstanding: false });
  });

  it('gives the FCM budget back: FCM did not take the wake', async () => {
    const device = await claimed('fcm', { budgetTat: t0 + 180_000 });
    await send(answering({ kind: 'deferred', cause: 'failing', reason: 'FCM 503 UNAVAILABLE', counts: false }), device);
    expect((await state(device.id))?.fcm_budget_tat?.getTime()).toBe(t0);
  });

  it('a delivery resets failures and the back-off', async () => {
    const device = await claimed('unifiedpush', { failures: 3 });
    await send(answering({ kind: 'deferred', cause: 'failing', reason: 'UnifiedPush 503', counts: true }), device);
    expect(await send(answering({ kind: 'delivered' }), device, t0 + 30_000)).toEqual({ kind: 'delivered' });
    expect(await state(device.id)).toMatchObject({ failures: 0, backoff_count: 0, backoff_until: null, backoff_reason: null });
  });
});

describe('sendWake on a configuration error of ours', () => {
  it('releases the claim with a growing back-off of its own, counts nothing, and names the transport it waits for', async () => {
    const device = await claimed('fcm', { failures: 2, budgetTat: t0 + 180_000 });
    const disabled = answering({ kind: 'misconfigured', reason: 'FCM disabled: no FCM_CREDENTIALS_JSON on this worker' });
    expect(await send(disabled, device)).toEqual({
      kind: 'misconfigured',
      reason: 'FCM disabled: no FCM_CREDENTIALS_JSON on this worker',
      until: t0 + misconfiguredRetryMs,
    });
    expect(await state(device.id)).toMatchObject({
      wake_outstanding: false,
      failures: 2,
      backoff_origin: misconfiguredOrigin('fcm'),
      backoff_until: new Date(t0 + misconfiguredRetryMs),
    });
    expect((await state(device.id))?.fcm_budget_tat?.getTime()).toBe(t0); // FCM did not take it
    const delays = [];
    for (let i = 0; i < 6; i++) delays.push(((await send(disabled, device, t0)) as { until: number }).until - t0);
    expect(delays).toEqual([10, 20, 40, 60, 60, 60].map((minutes) => minutes * 60_000)); // doubling, capped at misconfiguredMaxMs
    expect(misconfiguredMaxMs).toBe(60 * 60_000);
    expect((await state(device.id))?.failures).toBe(2);
  });
});

describe('re-registration and the back-off', () => {
  it('keeps a back-off and the budget for the same token, clears the back-off for a new one', async () => {
    const device = await claimed('fcm', { budgetTat: t0 + 360_000 });
    await send(answering({ kind: 'deferred', cause: 'rate_limited', reason: 'FCM 429 QUOTA_EXCEEDED', counts: false, until: t0 + 60_000 }), device);
    const identity = { userId: '1', deviceId: device.deviceId };
    // Re-registering is for a device with a live session.
    await db.pool.query(
      sql.unsafe`INSERT INTO refresh_tokens (user_id, device_id, expires_at) VALUES (${identity.userId}, ${identity.deviceId}, now() + interval '1 day')`,
    );
    await upsertRegistration(db.pool, identity, { transport: 'fcm', token: `fcm-token-${device.deviceId}` });
    expect(await state(device.id)).toMatchObject({ backoff_until: new Date(t0 + 60_000), backoff_count: 1, fcm_budget_tat: new Date(t0 + 180_000) });
    await upsertRegistration(db.pool, identity, { transport: 'fcm', token: 'a-rotated-token' });
    expect(await state(device.id)).toMatchObject({
      backoff_until: null,
      backoff_count: 0,
      backoff_reason: null,
      fcm_budget_tat: new Date(t0 + 180_000),
    });
  });
});

describe('counting a wake', () => {
  it('counts each wake once, by transport, priority and outcome (push_wakes_total)', async () => {
    const device = await claimed('unifiedpush');
    const count = async (outcome: string) =>
      (await wakes.get()).values.find((v) => v.labels.transport === 'unifiedpush' && v.labels.priority === 'high' && v.labels.outcome === outcome)
        ?.value ?? 0;
    const before = await count('dead');
    const { sendWake } = activitiesWith(db.pool, async () => ({ kind: 'dead', reason: 'UnifiedPush 404: endpoint gone' }));
    await sendWake({ registrationId: device.id, userId: '1', deviceId: device.deviceId, priority: 'high', now: t0 + 1_000 });
    expect(await count('dead')).toBe(before + 1);
  });

  it("counts a deferred wake with its cause: a failing send in an outage is the outage's", async () => {
    const deferredBy = async (cause: string) =>
      (await wakes.get()).values.find((v) => v.labels.transport === 'unifiedpush' && v.labels.outcome === 'deferred' && v.labels.cause === cause)
        ?.value ?? 0;
    const [failingBefore, outageBefore] = [await deferredBy('failing'), await deferredBy('outage')];
    await send(answering({ kind: 'deferred', cause: 'failing', reason: 'UnifiedPush 503', counts: true }), await claimed());
    const inOutage = {
      kind: 'deferred',
      cause: 'failing',
      reason: 'UnifiedPush 503',
      counts: false,
      origin: 'unifiedpush https://up.example',
    } as const;
    const device = await claimed();
    expect(await send(answering(inOutage), device)).toMatchObject({ kind: 'deferred', cause: 'outage' });
    expect(await state(device.id)).toMatchObject({ backoff_cause: 'outage', backoff_origin: 'unifiedpush https://up.example' });
    expect([await deferredBy('failing'), await deferredBy('outage')]).toEqual([failingBefore + 1, outageBefore + 1]);
  });
});

describe('claimAndSendWake (a run begun unmarked: one local activity per look)', () => {
  async function withDm(deviceId: string): Promise<string> {
    const id = await db.pool.oneFirst(sql.type(z.object({ id: z.string() }))`
      INSERT INTO push_registrations (user_id, device_id, transport, token)
      VALUES (1, ${deviceId}, 'unifiedpush', 'https://up.example/x') RETURNING id`);
    await db.pool.query(sql.unsafe`
      INSERT INTO push_pending (registration_id, channel_id, message_count, first_message_id, first_at, last_message_id, is_dm)
      VALUES (${id}, 7, 1, 1, now(), 1, true)`);
    return id;
  }

  function recordingSender() {
    const sent: { id: string; priority: string }[] = [];
    const activities = activitiesWith(db.pool, async (registration, priority) => {
      sent.push({ id: registration.id, priority });
      return { kind: 'delivered' };
    });
    return { sent, ...activities };
  }

  it("sends the wake it claimed, with the claim's priority, and records it outstanding", async () => {
    const id = await withDm('combined-1');
    const { sent, claimAndSendWake } = recordingSender();
    const look = await claimAndSendWake({ userId: '1', deviceId: 'combined-1', now: Date.now() });
    expect(look).toMatchObject({ claim: { status: 'claimed', registrationId: id, priority: 'high' }, sent: { kind: 'delivered' } });
    expect(sent).toEqual([{ id, priority: 'high' }]);
    expect(
      await db.pool.oneFirst(sql.type(z.object({ wake_outstanding: z.boolean() }))`SELECT wake_outstanding FROM push_registrations WHERE id = ${id}`),
    ).toBe(true);
  });

  it('sends nothing when the claim is refused', async () => {
    await withDm('combined-2');
    const { sent, claimAndSendWake } = recordingSender();
    const now = Date.now();
    await claimAndSendWake({ userId: '1', deviceId: 'combined-2', now });
    const refused = await claimAndSendWake({ userId: '1', deviceId: 'combined-2', now: now + 1_000 }); // inside the interval
    expect(refused.claim.status).toBe('not-claimed');
    expect(refused.sent).toBeUndefined();
    expect(sent).toHaveLength(1);
  });

  it('claims and sends again when an attempt is retried with the same workflow time', async () => {
    const id = await withDm('combined-3');
    const { sent, claimAndSendWake } = recordingSender();
    const now = Date.now();
    await claimAndSendWake({ userId: '1', deviceId: 'combined-3', now });
    const retried = await claimAndSendWake({ userId: '1', deviceId: 'combined-3', now });
    expect(retried).toMatchObject({ claim: { status: 'claimed' }, sent: { kind: 'delivered' } });
    expect(sent).toEqual([
      { id, priority: 'high' },
      { id, priority: 'high' },
    ]);
  });

  it('reports a deleted registration as gone, sending nothing', async () => {
    const { sent, claimAndSendWake } = recordingSender();
    expect(await claimAndSendWake({ userId: '1', deviceId: 'never-registered', now: Date.now() })).toEqual({ claim: { status: 'gone' } });
    expect(sent).toHaveLength(0);
  });
});

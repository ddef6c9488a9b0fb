/**
 * The claim (one conditional UPDATE … RETURNING) against real PostgreSQL:
 * at most one outstanding wake, the minimum interval, the re-wake, priority, idempotent
 * retries, concurrent claimers, the back-off, the FCM budget shared by replicas,
 * and a claim racing a drain.
 */
import pg from 'pg';
import { sql } from 'slonik';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createRegistrationActivities } from '../../activities/registration.js';
import { createDatabasePool } from '../../src/db/pool.js';
import { waitFor } from '../../devstack/daemons.js';
import { createLogger } from '../../src/observability/log.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';

const minIntervalMs = 15_000;
const rewakeAfterMs = 900_000;
const t0 = Date.parse('2026-12-01T10:00:00.000Z');
let db: TestDatabase;
let claimWake: ReturnType<typeof createRegistrationActivities>['claimWake'];

beforeAll(async () => {
  db = await freshDatabase();
  ({ claimWake } = claimer());
  await db.pool.query(sql.unsafe`INSERT INTO users (id, username) VALUES (1, 'alice')`);
});
afterAll(async () => {
  await db.drop();
});

/** The claim activity with these FCM budget settings (off by default). */
function claimer(fcmBudget = { burst: 0, refillMs: 180_000, dmReserve: 5 }) {
  return createRegistrationActivities({
    pool: db.pool,
    log: createLogger({ level: 'silent', name: 'test' }),
    policy: { minIntervalMs, rewakeAfterMs, fcmBudget },
    transports: { send: () => Promise.reject(new Error('claim must not send')) },
  });
}

let registrationId: string;
beforeEach(async () => {
  await db.pool.query(sql.unsafe`DELETE FROM push_registrations`);
  registrationId = String(
    await db.pool.oneFirst(sql.unsafe`
      INSERT INTO push_registrations (user_id, device_id, transport, token) VALUES (1, 'phone', 'unifiedpush', 'https://up.example/x') RETURNING id`),
  );
});

async function addPending(channelId: number, isDm: boolean): Promise<void> {
  await db.pool.query(sql.unsafe`
    INSERT INTO push_pending (registration_id, channel_id, message_count, first_message_id, first_at, last_message_id, is_dm)
    VALUES (${registrationId}, ${channelId}, 1, ${channelId * 10}, now(), ${channelId * 10}, ${isDm})`);
}

async function drain(): Promise<void> {
  await db.pool.transaction(async (tx) => {
    await tx.query(sql.unsafe`DELETE FROM push_pending WHERE registration_id = ${registrationId}`);
    await tx.query(sql.unsafe`UPDATE push_registrations SET wake_outstanding = false WHERE id = ${registrationId}`);
  });
}

const device = { userId: '1', deviceId: 'phone' };

describe('claimWake', () => {
  it('claims nothing when nothing is pending, and reports the device idle', async () => {
    expect(await claimWake({ ...device, now: t0 })).toMatchObject({
      status: 'not-claimed',
      transport: 'unifiedpush',
      observed: { outstanding: false, hasPending: false, lastWokenAt: null },
      intervals: { minIntervalMs, rewakeAfterMs },
    });
  });

  it('answers gone when the registration does not exist', async () => {
    expect(await claimWake({ userId: '1', deviceId: 'tablet', now: t0 })).toEqual({ status: 'gone' });
  });

  it('claims once, then holds the wake outstanding until a drain and the interval', async () => {
    await addPending(10, false);
    expect(await claimWake({ ...device, now: t0 })).toMatchObject({ status: 'claimed', registrationId, priority: 'normal' });
    // Outstanding: nothing more, however much time passes short of the re-wake.
    expect(await claimWake({ ...device, now: t0 + 60_000 })).toMatchObject({
      status: 'not-claimed',
      observed: { outstanding: true, hasPending: true, lastWokenAt: t0 },
    });
    await drain();
    await addPending(11, false);
    // Drained, but inside the minimum interval: still nothing.
    expect(await claimWake({ ...device, now: t0 + minIntervalMs - 1 })).toMatchObject({
      status: 'not-claimed',
      observed: { outstanding: false, hasPending: true },
    });
    expect(await claimWake({ ...device, now: t0 + minIntervalMs })).toMatchObject({ status: 'claimed' });
  });

  it('re-wakes an undrained device after the re-wake interval, only while rows are pending', async () => {
    await addPending(10, false);
    expect((await claimWake({ ...device, now: t0 })).status).toBe('claimed');
    expect((await claimWake({ ...device, now: t0 + rewakeAfterMs - 1 })).status).toBe('not-claimed');
    expect((await claimWake({ ...device, now: t0 + rewakeAfterMs })).status).toBe('claimed');
    await db.pool.query(sql.unsafe`DELETE FROM push_pending`);
    expect((await claimWake({ ...device, now: t0 + 3 * rewakeAfterMs })).status).toBe('not-claimed');
  });

  it('is high priority iff a pending row is a DM', async () => {
    await addPending(10, false);
    await addPending(20, true);
    expect(await claimWake({ ...device, now: t0 })).toMatchObject({ status: 'claimed', priority: 'high' });
  });

  it('gives a retried claim (same workflow time) the same answer, and no other claimer a second wake', async () => {
    await addPending(10, true);
    const first = await claimWake({ ...device, now: t0 });
    expect(first.status).toBe('claimed');
    expect(await claimWake({ ...device, now: t0 })).toEqual(first);
    expect((await claimWake({ ...device, now: t0 + 1 })).status).toBe('not-claimed');
  });

  it('sends a retried claim at the priority it recorded, though a DM arrived between the attempts', async () => {
    await addPending(10, false);
    const first = await claimWake({ ...device, now: t0 });
    expect(first).toMatchObject({ status: 'claimed', priority: 'normal' });
    await addPending(20, true);
    // The same claim again (its result was lost): the normal wake it recorded, not a high one.
    expect(await claimWake({ ...device, now: t0 })).toEqual(first);
    // A look at another time while that wake is outstanding (its workflow task was lost): the
    // wake to send again is the one recorded.
    expect(await claimWake({ ...device, now: t0 + 1_000 })).toMatchObject({
      status: 'not-claimed',
      priority: 'normal',
      observed: { outstanding: true, lastWokenAt: t0 },
    });
    // The DM then escalates, once: one high wake after the normal one, not two.
    expect(await claimWake({ ...device, now: t0 + minIntervalMs })).toMatchObject({ status: 'claimed', priority: 'high', escalation: true });
    expect((await claimWake({ ...device, now: t0 + 2 * minIntervalMs })).status).toBe('not-claimed');
  });

  it('lets exactly one of many concurrent claimers win', async () => {
    await addPending(10, false);
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => claimWake({ ...device, now: t0 + i })));
    expect(results.filter((r) => r.status === 'claimed')).toHaveLength(1);
    const row = await db.pool.one(sql.unsafe`SELECT wake_outstanding, last_woken_at FROM push_registrations WHERE id = ${registrationId}`);
    expect(row).toMatchObject({ wake_outstanding: true });
  });
});

describe('claimWake after a late delivery', () => {
  it('counts the interval and the re-wake from when the wake went out, not from the claim', async () => {
    await addPending(10, false);
    expect((await claimWake({ ...device, now: t0 })).status).toBe('claimed');
    // The send was retried for 20 minutes (our configuration was broken) and went out then.
    const wokenAt = t0 + 20 * 60_000;
    expect(await claimWake({ ...device, now: wokenAt + minIntervalMs, wokenAt })).toMatchObject({
      status: 'not-claimed',
      readyAt: wokenAt + rewakeAfterMs,
    });
    expect((await claimWake({ ...device, now: wokenAt + rewakeAfterMs - 1, wokenAt })).status).toBe('not-claimed');
    expect((await claimWake({ ...device, now: wokenAt + rewakeAfterMs, wokenAt })).status).toBe('claimed');
  });
});

describe('claimWake and the back-off', () => {
  it('refuses while a back-off is in force, says until when, and claims from then on', async () => {
    await addPending(10, true);
    const until = t0 + 600_000;
    await db.pool.query(
      sql.unsafe`UPDATE push_registrations SET backoff_until = ${new Date(until).toISOString()}, backoff_reason = 'UnifiedPush 429: rate limited' WHERE id = ${registrationId}`,
    );
    expect(await claimWake({ ...device, now: t0 })).toMatchObject({
      status: 'not-claimed',
      readyAt: until,
      heldBack: 'backoff',
      control: { backoff: { until, reason: 'UnifiedPush 429: rate limited' } },
    });
    expect((await claimWake({ ...device, now: until - 1 })).status).toBe('not-claimed');
    expect((await claimWake({ ...device, now: until })).status).toBe('claimed');
  });

  it('holds the re-wake of an undrained wake back too', async () => {
    await addPending(10, false);
    expect((await claimWake({ ...device, now: t0 })).status).toBe('claimed');
    const until = t0 + rewakeAfterMs + 120_000;
    await db.pool.query(sql.unsafe`UPDATE push_registrations SET backoff_until = ${new Date(until).toISOString()} WHERE id = ${registrationId}`);
    expect(await claimWake({ ...device, now: t0 + rewakeAfterMs })).toMatchObject({ status: 'not-claimed', readyAt: until, heldBack: 'backoff' });
    expect((await claimWake({ ...device, now: until })).status).toBe('claimed');
  });
});

describe('claimWake and the FCM budget', () => {
  const budget = { burst: 4, refillMs: 180_000, dmReserve: 1 };
  let budgeted: ReturnType<typeof claimer>['claimWake'];
  beforeEach(async () => {
    budgeted = claimer(budget).claimWake;
    await db.pool.query(sql.unsafe`UPDATE push_registrations SET transport = 'fcm', token = 'fcm-token' WHERE id = ${registrationId}`);
  });

  /** Claims at `now`, then drains (the phone drains every wake at once) and adds a row back. */
  async function wakeAndDrain(now: number, isDm = false) {
    const result = await budgeted({ ...device, now });
    if (result.status === 'claimed') {
      await drain();
      await addPending(isDm ? 20 : 10, isDm);
    }
    return result;
  }

  it('lets server-channel wakes spend down to the reserve, a DM spend the rest, and says when the next fits', async () => {
    await addPending(10, false);
    const claims = [];
    for (let i = 0; i < 4; i++) claims.push((await wakeAndDrain(t0 + i * minIntervalMs)).status);
    // burst 4 − reserve 1 = 3 normal wakes; the 4th is held back, its rows stay pending.
    expect(claims).toEqual(['claimed', 'claimed', 'claimed', 'not-claimed']);
    const held = await budgeted({ ...device, now: t0 + 3 * minIntervalMs });
    // tat = t0 + 3 refills; the next normal wake needs tat + refill − (burst − reserve) × refill.
    expect(held).toMatchObject({
      status: 'not-claimed',
      heldBack: 'budget',
      readyAt: t0 + budget.refillMs,
      control: { budget: { ...budget, tat: t0 + 3 * budget.refillMs } },
    });
    expect(await db.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM push_pending WHERE registration_id = ${registrationId}`)).toBe(1);
    // A DM pending: high priority may spend the reserve, at once.
    await addPending(20, true);
    expect(await budgeted({ ...device, now: t0 + 3 * minIntervalMs })).toMatchObject({ status: 'claimed', priority: 'high' });
    await drain();
    await addPending(20, true);
    // Now the bucket is empty for everyone until a refill.
    expect(await budgeted({ ...device, now: t0 + 4 * minIntervalMs })).toMatchObject({
      status: 'not-claimed',
      heldBack: 'budget',
      readyAt: t0 + budget.refillMs,
    });
    expect((await budgeted({ ...device, now: t0 + budget.refillMs - 1 })).status).toBe('not-claimed');
    expect((await budgeted({ ...device, now: t0 + budget.refillMs })).status).toBe('claimed');
  });

  it('refills one wake per refill interval, up to the burst', async () => {
    await addPending(10, true);
    for (let i = 0; i < 4; i++) expect((await wakeAndDrain(t0 + i * minIntervalMs, true)).status).toBe('claimed');
    expect((await wakeAndDrain(t0 + 4 * minIntervalMs, true)).status).toBe('not-claimed');
    // After a day the bucket is full again, not fuller: four, then held back.
    const later = t0 + 86_400_000;
    const after = [];
    for (let i = 0; i < 5; i++) after.push((await wakeAndDrain(later + i * minIntervalMs, true)).status);
    expect(after).toEqual(['claimed', 'claimed', 'claimed', 'claimed', 'not-claimed']);
  });

  it('spends nothing more on a retried claim (same workflow time)', async () => {
    await addPending(10, false);
    const first = await budgeted({ ...device, now: t0 });
    expect(await budgeted({ ...device, now: t0 })).toEqual(first);
    const tat = await db.pool.oneFirst(sql.unsafe`SELECT fcm_budget_tat FROM push_registrations WHERE id = ${registrationId}`);
    expect((tat as Date).getTime()).toBe(t0 + budget.refillMs);
  });

  it('spends one token per wake sent when a DM arrives between a claim and its retry: normal, then one escalation', async () => {
    await addPending(10, false);
    const tat = async () =>
      ((await db.pool.oneFirst(sql.unsafe`SELECT fcm_budget_tat FROM push_registrations WHERE id = ${registrationId}`)) as Date).getTime();
    const sent = [await budgeted({ ...device, now: t0 })];
    await addPending(20, true);
    sent.push(await budgeted({ ...device, now: t0 }), await budgeted({ ...device, now: t0 + minIntervalMs }));
    expect(sent.map((c) => c.status === 'claimed' && c.priority)).toEqual(['normal', 'normal', 'high']);
    expect(await tat()).toBe(t0 + 2 * budget.refillMs);
  });

  it('spends the budget on a re-wake like on any wake', async () => {
    await addPending(10, false);
    const claimed = [];
    for (let i = 0; i < 4; i++) claimed.push((await budgeted({ ...device, now: t0 + i * rewakeAfterMs })).status);
    // Re-wakes 15 min apart refill 5 wakes each: never held back at this pace.
    expect(claimed).toEqual(['claimed', 'claimed', 'claimed', 'claimed']);
    const tat = (await db.pool.oneFirst(sql.unsafe`SELECT fcm_budget_tat FROM push_registrations WHERE id = ${registrationId}`)) as Date;
    expect(tat.getTime()).toBe(t0 + 3 * rewakeAfterMs + budget.refillMs);
  });

  it("is off with a burst of 0 (today's behaviour), and never applies to UnifiedPush", async () => {
    const unlimited = claimer({ burst: 0, refillMs: 180_000, dmReserve: 5 }).claimWake;
    await addPending(10, false);
    for (let i = 0; i < 30; i++) {
      expect((await unlimited({ ...device, now: t0 + i * minIntervalMs })).status).toBe('claimed');
      await drain();
      await addPending(10, false);
    }
    await db.pool.query(
      sql.unsafe`UPDATE push_registrations SET transport = 'unifiedpush', token = 'https://up.example/x' WHERE id = ${registrationId}`,
    );
    for (let i = 30; i < 60; i++) {
      expect((await budgeted({ ...device, now: t0 + i * minIntervalMs })).status).toBe('claimed');
      await drain();
      await addPending(10, false);
    }
    expect(await db.pool.oneFirst(sql.unsafe`SELECT fcm_budget_tat FROM push_registrations WHERE id = ${registrationId}`)).toBeNull();
  });

  it('holds across two worker replicas claiming at once: never more wakes than the budget allows', async () => {
    // Two replicas = two activity sets on two pools. Every round both claim at once, at
    // slightly different workflow times (as two workflow tasks would), and the phone drains.
    const replicaPools = [await createDatabasePool(db.url, { maximumPoolSize: 4 }), await createDatabasePool(db.url, { maximumPoolSize: 4 })];
    try {
      const replicas = replicaPools.map(
        (pool) =>
          createRegistrationActivities({
            pool,
            log: createLogger({ level: 'silent', name: 'test' }),
            policy: { minIntervalMs, rewakeAfterMs, fcmBudget: budget },
            transports: { send: () => Promise.reject(new Error('not here')) },
          }).claimWake,
      );
      await addPending(10, false);
      const roundMs = minIntervalMs;
      const rounds = 40; // 10 minutes
      let wakes = 0;
      for (let round = 0; round < rounds; round++) {
        const now = t0 + round * roundMs;
        // Distinct times: the same (device, time) is by construction a retry of one claim.
        const results = await Promise.all(replicas.flatMap((claim, r) => [0, 1, 2].map((j) => claim({ ...device, now: now + 3 * r + j }))));
        const claimed = results.filter((r) => r.status === 'claimed').length;
        expect(claimed).toBeLessThanOrEqual(1);
        wakes += claimed;
        if (claimed > 0) {
          await drain();
          await addPending(10, false);
        }
      }
      const elapsed = (rounds - 1) * roundMs;
      // burst − reserve normal wakes at once, then one per refill.
      expect(wakes).toBeLessThanOrEqual(budget.burst - budget.dmReserve + Math.floor(elapsed / budget.refillMs));
      expect(wakes).toBe(budget.burst - budget.dmReserve + Math.floor(elapsed / budget.refillMs));
    } finally {
      for (const pool of replicaPools) await pool.end();
    }
  });
});

describe('claimWake concurrent with a drain', () => {
  it('does not claim for rows a drain deleted while the claim waited for its lock', async () => {
    await addPending(10, false);
    // The drain takes the row lock and deletes the rows, and holds its transaction open
    // until the claim is seen waiting for that lock; then it commits. (A plain client: the
    // pool would not let the claim run while a transaction of its own is open.)
    const drainer = new pg.Client({ connectionString: db.url });
    await drainer.connect();
    try {
      await drainer.query('BEGIN');
      await drainer.query('UPDATE push_registrations SET wake_outstanding = false WHERE id = $1', [registrationId]);
      await drainer.query('DELETE FROM push_pending WHERE registration_id = $1', [registrationId]);
      const claim = claimWake({ ...device, now: t0 });
      await waitFor(
        "the claim waiting for the drain's row lock",
        async () =>
          (await db.pool.oneFirst(sql.unsafe`
          SELECT count(*)::int FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%push_registrations%'`)) === 1,
        20_000,
      );
      await drainer.query('COMMIT');
      expect(await claim).toMatchObject({ status: 'not-claimed', observed: { outstanding: false, hasPending: false } });
      expect(await db.pool.one(sql.unsafe`SELECT wake_outstanding, last_woken_at FROM push_registrations WHERE id = ${registrationId}`)).toEqual({
        wake_outstanding: false,
        last_woken_at: null,
      });
    } finally {
      await drainer.end();
    }
  });
});

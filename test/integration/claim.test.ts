/**
 * The claim (design §4: "a single conditional UPDATE … RETURNING") against real PostgreSQL:
 * at most one outstanding wake, the minimum interval, the re-wake, priority, idempotent
 * retries, and concurrent claimers.
 */
import { sql } from 'slonik';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createRegistrationActivities } from '../../activities/registration.js';
import { createLogger } from '../../src/log.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';

const minIntervalMs = 15_000;
const rewakeAfterMs = 900_000;
const t0 = Date.parse('2026-12-01T10:00:00.000Z');
let db: TestDatabase;
let claimWake: ReturnType<typeof createRegistrationActivities>['claimWake'];

beforeAll(async () => {
  db = await freshDatabase();
  const noTransports = { forRegistration: () => { throw new Error('claim must not send'); } };
  ({ claimWake } = createRegistrationActivities({
    pool: db.pool,
    log: createLogger({ level: 'silent', name: 'test' }),
    coalescing: { minIntervalMs, rewakeAfterMs },
    transports: noTransports,
  }));
  await db.pool.query(sql.unsafe`INSERT INTO users (id, username) VALUES (1, 'alice')`);
});
afterAll(async () => {
  await db.drop();
});

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

  it('lets exactly one of many concurrent claimers win', async () => {
    await addPending(10, false);
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => claimWake({ ...device, now: t0 + i })));
    expect(results.filter((r) => r.status === 'claimed')).toHaveLength(1);
    const row = await db.pool.one(sql.unsafe`SELECT wake_outstanding, last_woken_at FROM push_registrations WHERE id = ${registrationId}`);
    expect(row).toMatchObject({ wake_outstanding: true });
  });
});

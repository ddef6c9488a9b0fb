/**
 * The worker's gauges of devices woken again and again without a drain, and of devices whose
 * HIGH wakes arrive lowered, are sized for a million registrations: each count reads its flag's
 * partial index — which holds the flagged devices only — never the table. And the flags follow
 * the deliveries and drains that set and clear them.
 */
import { sql } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRegistrationActivities } from '../../activities/registration.js';
import { repeatedlyUndrainedAfter } from '../../domain/vocabulary.js';
import { drainPending } from '../../src/api/drain.js';
import { createLogger } from '../../src/observability/log.js';
import { flaggedCounts } from '../../src/worker/registration-gauges.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';

let db: TestDatabase;
const registrations = 50_000;
const flagged = 40;

beforeAll(async () => {
  db = await freshDatabase();
  await db.pool.query(sql.unsafe`INSERT INTO users (id, username) SELECT g, 'u' || g FROM generate_series(1, ${registrations}) g`);
  await db.pool.query(sql.unsafe`
    INSERT INTO push_registrations (user_id, device_id, transport, token, wakes_since_drain, repeatedly_undrained, priority_lowered)
    SELECT g, 'phone', CASE WHEN g % 2 = 0 THEN 'fcm' ELSE 'unifiedpush' END, 'token-' || g,
           CASE WHEN g <= ${flagged} THEN 3 ELSE 0 END, g <= ${flagged}, g > ${registrations - flagged}
    FROM generate_series(1, ${registrations}) g`);
  await db.pool.query(sql.unsafe`VACUUM ANALYZE push_registrations`);
});
afterAll(async () => {
  await db?.drop();
});

const planRow = z.object({ 'QUERY PLAN': z.unknown() });

/** Every node of a JSON plan, flattened. */
function nodes(plan: Record<string, unknown>): Array<Record<string, unknown>> {
  return [plan, ...((plan['Plans'] as Array<Record<string, unknown>> | undefined) ?? []).flatMap(nodes)];
}

describe('the gauges of flagged devices', () => {
  it('count each flag from its partial index, reading only the flagged devices', async () => {
    const explained = await db.pool.oneFirst(sql.type(planRow)`EXPLAIN (ANALYZE, FORMAT JSON) ${flaggedCounts}`);
    const all = nodes((explained as Array<{ Plan: Record<string, unknown> }>)[0]!.Plan);
    const scans = all.filter((n) => String(n['Node Type']).includes('Scan'));
    expect(scans.map((n) => n['Node Type'])).not.toContain('Seq Scan');
    expect(scans.map((n) => n['Index Name']).sort()).toEqual([
      'push_registrations_priority_lowered_idx',
      'push_registrations_repeatedly_undrained_idx',
    ]);
    expect(scans.reduce((read, n) => read + Number(n['Actual Rows'] ?? 0), 0)).toBe(2 * flagged);

    const counts = await db.pool.any(flaggedCounts);
    expect([...counts].sort((a, b) => `${a.flag}${a.transport}`.localeCompare(`${b.flag}${b.transport}`))).toEqual([
      { flag: 'priority_lowered', transport: 'fcm', count: flagged / 2 },
      { flag: 'priority_lowered', transport: 'unifiedpush', count: flagged / 2 },
      { flag: 'repeatedly_undrained', transport: 'fcm', count: flagged / 2 },
      { flag: 'repeatedly_undrained', transport: 'unifiedpush', count: flagged / 2 },
    ]);
  });

  it(`flag a device at its ${repeatedlyUndrainedAfter}rd accepted wake without a drain, and clear it at the drain`, async () => {
    const userId = String(registrations - flagged - 1); // a device flagged neither way
    const { claimWake, sendWake } = createRegistrationActivities({
      pool: db.pool,
      log: createLogger({ level: 'silent', name: 'test' }),
      policy: { minIntervalMs: 15_000, rewakeAfterMs: 900_000, fcmBudget: { burst: 0, refillMs: 180_000, dmReserve: 0 } },
      transports: { send: async () => ({ kind: 'delivered', status: 201 }) },
    });
    const row = () =>
      db.pool.one(sql.type(z.object({ id: z.string(), wakes_since_drain: z.number(), repeatedly_undrained: z.boolean() }))`
        SELECT id::text AS id, wakes_since_drain, repeatedly_undrained FROM push_registrations WHERE user_id = ${userId}`);
    const { id } = await row();
    await db.pool.query(sql.unsafe`
      INSERT INTO push_pending (registration_id, channel_id, message_count, first_message_id, first_at, last_message_id, is_dm)
      VALUES (${id}, 1, 1, 1, now(), 1, false)`);
    const seen: Array<[number, boolean]> = [];
    const t0 = Date.now();
    for (let i = 0; i < repeatedlyUndrainedAfter; i++) {
      const now = t0 + i * 1_000_000; // each a re-wake of the undrained wake
      const claim = await claimWake({ userId, deviceId: 'phone', now });
      expect(claim.status).toBe('claimed');
      await sendWake({ registrationId: id, userId, deviceId: 'phone', priority: 'normal', now });
      const after = await row();
      seen.push([after.wakes_since_drain, after.repeatedly_undrained]);
    }
    expect(seen).toEqual([
      [1, false],
      [2, false],
      [3, true],
    ]);
    await drainPending(db.pool, { userId, deviceId: 'phone' });
    expect(await row()).toMatchObject({ wakes_since_drain: 0, repeatedly_undrained: false });
  });
});

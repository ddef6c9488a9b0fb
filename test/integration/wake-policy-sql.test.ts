/**
 * The claim's SQL decides the wake policy inside one conditional UPDATE; domain/wake-policy.ts
 * states it. Here they are held equal: generated snapshots — every column the rule reads, times
 * on and around each boundary — are written to PostgreSQL, claimed by the real activity, and
 * the outcome compared with `wakeVerdict` on the same snapshot. A rule changed in one place and
 * not in the other fails here with the snapshot that tells them apart.
 */
import fc from 'fast-check';
import { sql } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRegistrationActivities } from '../../activities/registration.js';
import { createLogger } from '../../src/observability/log.js';
import { budgetSpent, budgeted, wakeVerdict, type DeviceSnapshot, type WakePolicy } from '../../domain/wake-policy.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';

const now = Date.parse('2026-12-04T12:00:00.000Z');

let db: TestDatabase;
beforeAll(async () => {
  db = await freshDatabase();
  await db.pool.query(sql.unsafe`INSERT INTO users (id, username) VALUES (1, 'alice')`);
});
afterAll(async () => {
  await db.drop();
});

/** Times near the boundaries the rule draws for this policy, and some anywhere. */
function timesAround(policy: WakePolicy): fc.Arbitrary<number> {
  const { minIntervalMs, rewakeAfterMs, fcmBudget } = policy;
  const edges = [0, minIntervalMs, rewakeAfterMs, fcmBudget.refillMs, fcmBudget.refillMs * (fcmBudget.burst - fcmBudget.dmReserve)];
  return fc.oneof(
    fc.constantFrom(...edges).chain((edge) => fc.constantFrom(-1, 0, 1).map((d) => now - edge + d)),
    fc.integer({ min: now - 2 * rewakeAfterMs, max: now + 2 * rewakeAfterMs }),
  );
}

const policies: fc.Arbitrary<WakePolicy> = fc.record({
  minIntervalMs: fc.constantFrom(15_000, 3_000),
  rewakeAfterMs: fc.constantFrom(900_000, 60_000),
  fcmBudget: fc.oneof(
    fc.constant({ burst: 20, refillMs: 180_000, dmReserve: 5 }),
    fc.constant({ burst: 3, refillMs: 10_000, dmReserve: 1 }),
    fc.constant({ burst: 0, refillMs: 180_000, dmReserve: 5 }),
  ),
});

interface Case {
  readonly policy: WakePolicy;
  readonly snapshot: DeviceSnapshot;
  /** What the row holds (the snapshot's `lastWokenAt` is the later of it and `wokenAt`). */
  readonly lastWokenAtRow: number | null;
  readonly wokenAt: number | undefined;
  /** The pending rows: none, a server channel's, a DM's, or both. */
  readonly pending: 'none' | 'channel' | 'dm' | 'both';
}

const cases: fc.Arbitrary<Case> = policies.chain((policy) => {
  const time = timesAround(policy);
  return fc
    .record({
      transport: fc.constantFrom('fcm' as const, 'unifiedpush' as const),
      outstanding: fc.boolean(),
      lastWakePriority: fc.constantFrom(null, 'normal' as const, 'high' as const),
      lastWokenAtRow: fc.option(time, { nil: null }),
      wokenAt: fc.option(time, { nil: undefined }),
      backoffUntil: fc.option(time, { nil: null, freq: 2 }),
      budgetTat: fc.option(
        fc
          .integer({ min: 0, max: policy.fcmBudget.burst + 1 })
          .chain((k) => fc.constantFrom(-1, 0, 1).map((d) => now + k * policy.fcmBudget.refillMs + d)),
        { nil: null },
      ),
      pending: fc.constantFrom('none' as const, 'channel' as const, 'dm' as const, 'both' as const),
      testWake: fc.boolean(),
    })
    .map((c) => {
      // A retry of the very claim (`last_woken_at = now`, outstanding) is the claim's own
      // idempotency, not the policy: it is checked on its own below.
      const lastWokenAtRow = c.outstanding && c.lastWokenAtRow === now ? now - 1 : c.lastWokenAtRow;
      const times = [lastWokenAtRow, c.wokenAt].filter((t): t is number => t !== null && t !== undefined);
      return {
        policy,
        lastWokenAtRow,
        wokenAt: c.wokenAt,
        pending: c.pending,
        snapshot: {
          transport: c.transport,
          outstanding: c.outstanding,
          lastWakePriority: c.lastWakePriority,
          lastWokenAt: times.length === 0 ? null : Math.max(...times),
          backoffUntil: c.backoffUntil,
          budgetTat: c.budgetTat,
          hasPending: c.pending !== 'none',
          dmPending: c.pending === 'dm' || c.pending === 'both',
          testWake: c.testWake,
        },
      };
    });
});

const afterRow = z.object({
  wake_outstanding: z.boolean(),
  last_woken_at: z.date().nullable(),
  last_wake_priority: z.string().nullable(),
  fcm_budget_tat: z.date().nullable(),
});

const iso = (ms: number | null | undefined) => (ms === null || ms === undefined ? null : new Date(ms).toISOString());

async function writeGate(c: Case): Promise<string> {
  const { snapshot } = c;
  await db.pool.query(sql.unsafe`DELETE FROM push_registrations`);
  const id = await db.pool.oneFirst(sql.type(z.object({ id: z.string() }))`
    INSERT INTO push_registrations (user_id, device_id, transport, token, wake_outstanding, last_woken_at, last_wake_priority, backoff_until, fcm_budget_tat, test_wake_pending)
    VALUES (1, 'phone', ${snapshot.transport}, 'token-or-endpoint', ${snapshot.outstanding}, ${iso(c.lastWokenAtRow)}, ${snapshot.lastWakePriority},
            ${iso(snapshot.backoffUntil)}, ${iso(snapshot.budgetTat)}, ${snapshot.testWake})
    RETURNING id::text AS id`);
  const rows: Array<[number, boolean]> = [];
  if (c.pending === 'channel' || c.pending === 'both') rows.push([10, false]);
  if (c.pending === 'dm' || c.pending === 'both') rows.push([20, true]);
  for (const [channel, isDm] of rows)
    await db.pool.query(sql.unsafe`
      INSERT INTO push_pending (registration_id, channel_id, message_count, first_message_id, first_at, last_message_id, is_dm)
      VALUES (${id}, ${channel}, 1, 1, now(), 1, ${isDm})`);
  return id;
}

function claimer(policy: WakePolicy) {
  return createRegistrationActivities({
    pool: db.pool,
    log: createLogger({ level: 'silent', name: 'test' }),
    policy,
    transports: { send: () => Promise.reject(new Error('the claim must not send')) },
  }).claimWake;
}

describe('the claim SQL and the wake policy', () => {
  it('agree on every generated snapshot: claimed iff due, the same priority, and the same answer when refused', async () => {
    await fc.assert(
      fc.asyncProperty(cases, async (c) => {
        await writeGate(c);
        const verdict = wakeVerdict(c.policy, c.snapshot, now);
        const result = await claimWake(c);
        expect(result.status).toBe(verdict.due ? 'claimed' : 'not-claimed');
        if (result.status === 'gone') return;
        // Refused while a wake is outstanding: the priority to send it again with is the one it was claimed with.
        const recorded = result.status === 'not-claimed' && c.snapshot.outstanding ? (c.snapshot.lastWakePriority ?? 'high') : verdict.priority;
        expect(result.priority).toBe(recorded);
        const after = await db.pool.one(sql.type(afterRow)`
          SELECT wake_outstanding, last_woken_at, last_wake_priority, fcm_budget_tat FROM push_registrations`);
        if (result.status === 'claimed') {
          expect(after).toMatchObject({ wake_outstanding: true, last_wake_priority: verdict.priority });
          expect(after.last_woken_at?.getTime()).toBe(now);
          const spent = budgeted(c.policy, c.snapshot.transport) ? budgetSpent(c.policy.fcmBudget, c.snapshot.budgetTat, now) : c.snapshot.budgetTat;
          expect(after.fcm_budget_tat?.getTime() ?? null).toBe(spent);
        } else {
          expect(result.readyAt ?? null).toBe(verdict.readyAt);
          expect(result.heldBack).toBe(verdict.heldBack);
          expect(after.last_woken_at?.getTime() ?? null).toBe(c.lastWokenAtRow);
          expect(after.fcm_budget_tat?.getTime() ?? null).toBe(c.snapshot.budgetTat);
        }
      }),
      { numRuns: 2_000 },
    );
  }, 300_000);

  it('a claim retried at its own time is answered "claimed" again and spends nothing more, whatever the policy says now', async () => {
    await fc.assert(
      fc.asyncProperty(cases, async (c) => {
        if (!c.snapshot.hasPending && !c.snapshot.testWake) return;
        await writeGate({
          ...c,
          lastWokenAtRow: null,
          wokenAt: undefined,
          snapshot: { ...c.snapshot, outstanding: false, lastWokenAt: null, backoffUntil: null },
        });
        const claimWake = claimer(c.policy);
        const first = await claimWake({ userId: '1', deviceId: 'phone', now });
        if (first.status !== 'claimed') return; // the budget refused it: nothing to retry
        const before = await db.pool.one(
          sql.type(afterRow)`SELECT wake_outstanding, last_woken_at, last_wake_priority, fcm_budget_tat FROM push_registrations`,
        );
        await expect(claimWake({ userId: '1', deviceId: 'phone', now })).resolves.toMatchObject({ status: 'claimed' });
        expect(
          await db.pool.one(sql.type(afterRow)`SELECT wake_outstanding, last_woken_at, last_wake_priority, fcm_budget_tat FROM push_registrations`),
        ).toEqual(before);
      }),
      { numRuns: 60 },
    );
  }, 300_000);

  async function claimWake(c: Case) {
    return claimer(c.policy)({ userId: '1', deviceId: 'phone', now, ...(c.wokenAt === undefined ? {} : { wokenAt: c.wokenAt }) });
  }
});

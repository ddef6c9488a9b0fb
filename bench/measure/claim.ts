/**
 * The claim (activities/registration.ts `claimWake`): claims per second with concurrent
 * claimers on distinct devices — the row lock, then the conditional UPDATE … RETURNING in a
 * fresh snapshot, in one short transaction — against a bare one-row UPDATE of the
 * same rows at the same concurrency: what the coalescing conditions, the budget and back-off
 * checks, the answer and the transaction cost.
 */
import { sql } from 'slonik';
import { createLogger, createRegistrationActivities } from '../../src/testing.js';
import type { Report } from '../report.js';
import type { BenchSettings } from '../settings.js';
import { setupProse } from '../setup-prose.js';
import { nextIds, seedUsers } from '../seed.js';
import type { BenchStack } from '../stack.js';

export async function measureClaim(stack: BenchStack, report: Report, settings: BenchSettings): Promise<void> {
  const section = report.section('claim', 'Claim SQL (row lock + one conditional UPDATE per wake)');
  const { devices, rounds } = settings.claim;
  const { pool } = stack;
  const users = await seedUsers(pool, devices);
  const [channelId] = nextIds(1);
  await pool.query(sql.unsafe`
    INSERT INTO push_registrations (user_id, device_id, transport, token)
    SELECT id, 'phone', 'unifiedpush', 'https://up.example/' || id FROM unnest(${sql.array(users, 'int8')}) AS id`);
  await pool.query(sql.unsafe`
    INSERT INTO push_pending (registration_id, channel_id, message_count, first_message_id, first_at, last_message_id, is_dm)
    SELECT r.id, ${channelId!}, 1, 1, now(), 1, false FROM push_registrations r WHERE r.user_id = ANY(${sql.array(users, 'int8')})`);
  const { claimWake } = createRegistrationActivities({
    pool,
    log: createLogger({ level: 'silent', name: 'bench' }),
    policy: { minIntervalMs: 15_000, rewakeAfterMs: 900_000, fcmBudget: { burst: 20, refillMs: 180_000, dmReserve: 5 } },
    transports: { send: () => Promise.reject(new Error('not used')) },
  });
  const base = Date.now();
  const timed = async (one: (userId: string, now: number) => Promise<unknown>) => {
    const started = performance.now();
    for (let round = 0; round < rounds; round++) {
      const now = base + round * 1_000_000; // past the re-wake each round: every claim succeeds
      await Promise.all(users.map((userId) => one(userId, now)));
    }
    return (rounds * devices) / ((performance.now() - started) / 1000);
  };
  const claims = await timed(async (userId, now) => {
    const result = await claimWake({ userId, deviceId: 'phone', now });
    if (result.status !== 'claimed') throw new Error(`claim ${result.status}`);
  });
  const bare = await timed((userId, now) =>
    pool.query(
      sql.unsafe`UPDATE push_registrations SET wake_outstanding = true, last_woken_at = ${new Date(now + 500_000_000).toISOString()}::timestamptz WHERE user_id = ${userId} AND device_id = 'phone'`,
    ),
  );
  report.figure(section, {
    name: 'successful claims per second',
    value: claims,
    unit: '/s',
    reference: { name: 'bare one-row UPDATE', value: bare },
    headline: 'claim SQL',
  });
  section.setup.push(setupProse('claim', { devices, rounds }));
  await pool.query(sql.unsafe`DELETE FROM push_registrations WHERE user_id = ANY(${sql.array(users, 'int8')})`);
}

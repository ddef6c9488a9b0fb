/**
 * The no-session sweep's full pass over 1,000,000 registrations: the real
 * maintenance workflow (its no-session step alone) on a worker process, from start to result,
 * walking the table in windows of 1,000 with its position in PostgreSQL. All registrations
 * but the last 1,000 have a live session, so every pass deletes those 1,000 (and tells their
 * — absent — workflows to stop). Reference: the whole rule as one bare statement, a
 * `DELETE … WHERE NOT EXISTS (refresh_tokens …)` over the table, rolled back.
 */
import { sql } from 'slonik';
import { z } from 'zod';
import { type MaintenanceReport, maintenanceWorkflowType } from '../../src/testing.js';
import type { Report } from '../report.js';
import type { BenchSettings } from '../settings.js';
import { setupProse } from '../setup-prose.js';
import type { BenchStack, RunningApps } from '../stack.js';
import { median } from '../stats.js';

/** Seeded users' ids start here, clear of every other measurement's. */
const firstUserId = 9_000_000_000_000;
const withoutSession = 1_000;

export async function measureMaintenanceSweep(stack: BenchStack, report: Report, settings: BenchSettings): Promise<void> {
  const section = report.section('sweep', 'Maintenance: the no-session sweep, one full pass');
  const { registrations, rounds } = settings.sweep;
  const { pool } = stack;
  const last = firstUserId + registrations - 1;
  const live = registrations - withoutSession;
  const seedStarted = performance.now();
  await pool.query(sql.unsafe`INSERT INTO users (id, username) SELECT g, 'sweep-' || g FROM generate_series(${firstUserId}::int8, ${last}::int8) g`);
  await pool.query(sql.unsafe`
    INSERT INTO refresh_tokens (user_id, device_id, expires_at)
    SELECT g, 'phone', now() + interval '30 days' FROM generate_series(${firstUserId}::int8, ${firstUserId + live - 1}::int8) g`);
  const addRegistrations = (from: number) =>
    pool.query(sql.unsafe`
      INSERT INTO push_registrations (user_id, device_id, transport, token)
      SELECT g, 'phone', 'fcm', 'sweep-token-' || g FROM generate_series(${from}::int8, ${last}::int8) g ORDER BY g`);
  await addRegistrations(firstUserId);
  await pool.query(sql.unsafe`VACUUM ANALYZE`);
  const seedSeconds = (performance.now() - seedStarted) / 1000;

  let apps: RunningApps | undefined;
  const ours: number[] = [];
  const reference: number[] = [];
  const reports: MaintenanceReport[] = [];
  try {
    apps = await stack.startApps({ label: 'sweep', taskQueue: 'bench-sweep', apps: ['worker'] });
    for (let round = 0; round <= rounds; round++) {
      // Reference first (rolled back, so the pass below finds the same rows).
      const bare = await pool
        .transaction(async (tx) => {
          const started = performance.now();
          await tx.query(sql.unsafe`
            DELETE FROM push_registrations r
            WHERE NOT EXISTS (
              SELECT 1 FROM refresh_tokens t
              WHERE t.user_id = r.user_id AND t.device_id = r.device_id AND t.revoked_at IS NULL AND t.expires_at > now())`);
          throw new Rollback(performance.now() - started);
        })
        .catch((error: unknown) => {
          if (error instanceof Rollback) return error.ms;
          throw error;
        });
      const started = performance.now();
      const result = await stack.temporal.workflow.execute(maintenanceWorkflowType, {
        taskQueue: 'bench-sweep',
        workflowId: `bench-sweep-${round}-${Date.now()}`,
        args: [{ only: ['noSession'] }],
      });
      const elapsed = performance.now() - started;
      if (result.prunedNoSession !== withoutSession || result.unfinished.length > 0) {
        throw new Error(
          `the pass pruned ${result.prunedNoSession} (expected ${withoutSession}), unfinished: ${result.unfinished.join(', ') || 'none'}`,
        );
      }
      if (round > 0) {
        ours.push(elapsed);
        reference.push(bare);
        reports.push(result);
      }
      await addRegistrations(firstUserId + live); // the 1,000 back for the next round
    }
  } finally {
    await apps?.stop();
    // The million leaves again, so that later measurements see the table they expect.
    await pool.query(sql.unsafe`DELETE FROM push_registrations WHERE user_id >= ${firstUserId}`);
    await pool.query(sql.unsafe`DELETE FROM users WHERE id >= ${firstUserId}`);
    await pool.query(sql.unsafe`VACUUM ANALYZE`);
  }
  const windows = Math.ceil(registrations / 1_000);
  const total = await pool.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM push_registrations`);
  const bareName = 'one bare DELETE … WHERE NOT EXISTS over the table (rolled back)';
  const scale = registrations.toLocaleString('en');
  report.figure(section, {
    name: `full pass over ${scale} registrations`,
    value: median(ours) / 1000,
    unit: 's',
    reference: { name: bareName, value: median(reference) / 1000 },
    headline: 'maintenance sweep',
  });
  report.figure(section, {
    name: 'registrations checked per second',
    value: registrations / (median(ours) / 1000),
    unit: '/s',
    reference: { name: bareName, value: registrations / (median(reference) / 1000) },
  });
  section.setup.push(
    setupProse('sweep', {
      registrations: scale,
      firstUserId,
      seedSeconds: seedSeconds.toFixed(0),
      withoutSession: withoutSession.toLocaleString('en'),
      windows: windows.toLocaleString('en'),
      rounds,
      remaining: total,
    }),
  );
  section.details.sweep = { ours, reference, reports };
}

class Rollback extends Error {
  constructor(readonly ms: number) {
    super('rollback');
  }
}

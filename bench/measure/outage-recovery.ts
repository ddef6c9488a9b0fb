/**
 * The end of an outage at 1,000,000 held-back registrations: the worker's recovery
 * (src/worker/outage-recovery.ts) clears every back-off the outage set, in keyset pages of 500
 * on the index (backoff_origin, id) of migration 000027. Reference: the query it replaced —
 * `WHERE backoff_origin = $k ORDER BY id LIMIT 500`, repeated, on the single-column index it
 * had — in a transaction rolled back, stopped after `referenceCapMs` (each of its pages reads
 * every row still held, so the whole would take far longer): its rate so far is the figure.
 *
 * No row has a wake pending, so nothing is signalled: this is the SQL of recovery alone (the
 * signals are one per device with rows pending, 16 at a time, the same either way).
 */
import { sql } from 'slonik';
import { z } from 'zod';
import { clearOutageBackoffs, recoveryPage } from '../../src/testing.js';
import type { Report } from '../report.js';
import type { BenchSettings } from '../settings.js';
import { setupProse } from '../setup-prose.js';
import type { BenchStack } from '../stack.js';

/** Seeded users' ids start here, clear of every other measurement's. */
const firstUserId = 8_000_000_000_000;
const origin = 'unifiedpush https://bench-outage.example';

export async function measureOutageRecovery(stack: BenchStack, report: Report, settings: BenchSettings): Promise<void> {
  const section = report.section('outage-recovery', 'The end of an outage: every held-back registration woken');
  const { registrations, referenceCapMs } = settings.outageRecovery;
  const { pool } = stack;
  const last = firstUserId + registrations - 1;
  const scale = registrations.toLocaleString('en');
  const seed = async () => {
    await pool.query(sql.unsafe`
      UPDATE push_registrations SET backoff_until = now() + interval '1 hour', backoff_origin = ${origin}, backoff_reason = 'unifiedpush outage: held back'
      WHERE user_id BETWEEN ${firstUserId}::int8 AND ${last}::int8`);
    await pool.query(sql.unsafe`VACUUM ANALYZE push_registrations`);
  };
  const seedStarted = performance.now();
  await pool.query(sql.unsafe`INSERT INTO users (id, username) SELECT g, 'outage-' || g FROM generate_series(${firstUserId}::int8, ${last}::int8) g`);
  await pool.query(sql.unsafe`
    INSERT INTO push_registrations (user_id, device_id, transport, token)
    SELECT g, 'phone', 'unifiedpush', 'https://bench-outage.example/up/' || g FROM generate_series(${firstUserId}::int8, ${last}::int8) g ORDER BY g`);
  await seed();
  const seedSeconds = (performance.now() - seedStarted) / 1000;
  try {
    // Reference first, rolled back: the old index and the old query, against the same rows.
    const reference = await pool
      .transaction(async (tx) => {
        await tx.query(sql.unsafe`DROP INDEX push_registrations_backoff_origin_id_idx`);
        await tx.query(
          sql.unsafe`CREATE INDEX push_registrations_backoff_origin_idx ON push_registrations (backoff_origin) WHERE backoff_origin IS NOT NULL`,
        );
        await tx.query(sql.unsafe`ANALYZE push_registrations`);
        const started = performance.now();
        let cleared = 0;
        let firstPageMs = 0;
        while (performance.now() - started < referenceCapMs) {
          const pageStarted = performance.now();
          const rows = await tx.any(sql.type(z.object({ id: z.string() }))`
            WITH held AS (
              SELECT id FROM push_registrations WHERE backoff_origin = ${origin} ORDER BY id LIMIT ${recoveryPage} FOR UPDATE SKIP LOCKED
            )
            UPDATE push_registrations r SET backoff_until = NULL, backoff_origin = NULL, backoff_reason = NULL
            FROM held WHERE r.id = held.id RETURNING r.id::text AS id`);
          if (cleared === 0) firstPageMs = performance.now() - pageStarted;
          cleared += rows.length;
          if (rows.length < recoveryPage) break;
        }
        throw new Rollback({ cleared, ms: performance.now() - started, firstPageMs });
      })
      .catch((error: unknown) => {
        if (error instanceof Rollback) return error.result;
        throw error;
      });

    const started = performance.now();
    let pages = 0;
    const { cleared } = await clearOutageBackoffs(pool, origin, async () => void pages++);
    const ms = performance.now() - started;
    if (cleared !== registrations) throw new Error(`recovery cleared ${cleared} back-offs (expected ${registrations})`);

    const referenceName = `the old query on the old index (stopped after ${(referenceCapMs / 1000).toFixed(0)} s, ${reference.cleared.toLocaleString('en')} cleared)`;
    report.figure(section, {
      name: `back-offs cleared per second (${scale} held)`,
      value: cleared / (ms / 1000),
      unit: '/s',
      reference: { name: referenceName, value: reference.cleared / (reference.ms / 1000) },
      headline: 'outage recovery',
    });
    report.figure(section, { name: `all ${scale} cleared`, value: ms / 1000, unit: 's', note: `${pages} pages of ${recoveryPage}` });
    const referencePages = Math.max(1, Math.ceil(reference.cleared / recoveryPage));
    report.figure(section, {
      name: 'mean page of 500',
      value: ms / pages,
      unit: 'ms',
      reference: {
        name: `the old query's mean page over its ${referencePages} pages (its first: ${reference.firstPageMs.toFixed(1)} ms)`,
        value: reference.ms / referencePages,
      },
    });
    section.setup.push(
      setupProse('outage-recovery', {
        registrations: scale,
        firstUserId,
        seedSeconds: seedSeconds.toFixed(0),
        pageSize: recoveryPage,
        referenceCapSeconds: (referenceCapMs / 1000).toFixed(0),
      }),
    );
    section.details.outageRecovery = { ours: { cleared, ms, pages }, reference };
  } finally {
    await pool.query(sql.unsafe`DELETE FROM push_registrations WHERE user_id >= ${firstUserId}::int8 AND user_id <= ${last}::int8`);
    await pool.query(sql.unsafe`DELETE FROM users WHERE id >= ${firstUserId}::int8 AND id <= ${last}::int8`);
    await pool.query(sql.unsafe`VACUUM ANALYZE`);
  }
}

class Rollback extends Error {
  constructor(readonly result: { cleared: number; ms: number; firstPageMs: number }) {
    super('rollback');
  }
}

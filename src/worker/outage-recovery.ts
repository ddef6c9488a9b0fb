/**
 * The SQL of an outage's end and of its probes (the loop is outage-coordinator.ts).
 *
 * Recovery clears the back-off of every registration an outage held back (`backoff_origin`),
 * a page at a time by keyset — `backoff_origin = $origin AND id > $last ORDER BY id` on the
 * index (backoff_origin, id) of migration 000027 — so each page reads its own rows only, and
 * a million held rows cost a million row visits, not a million per page.
 *
 * Pages lock with `FOR NO KEY UPDATE SKIP LOCKED`, the lock their UPDATE takes anyway (it
 * changes no key): replicas recovering the same origin share the work, and the bridge's
 * recording, which holds `FOR KEY SHARE` on every recipient's registration while it writes
 * their pending rows (src/bridge/record-events.ts), does not conflict with it — a `FOR UPDATE`
 * would skip every member of a large channel being recorded at that moment. A row skipped
 * because another transaction held it (a replica's page, a claim) is found by the next pass
 * from the start, which costs one index probe when nothing is left; one still held after the
 * last pass is reported, and the worker comes back for it (`remaining`).
 */
import { sql } from 'slonik';
import { z } from 'zod';
import type { DatabasePool } from '../db/pool.js';
import { transportNameSchema } from '../../domain/vocabulary.js';
import type { OriginKey } from '../transports/outage-detector.js';

export const recoveryPage = 500;
/** Passes over the origin's held rows at most (the first does the work; see the module comment). */
const maxPasses = 3;

export const heldRow = z.object({
  id: z.string(),
  user_id: z.string(),
  device_id: z.string(),
  transport: transportNameSchema,
  has_pending: z.boolean(),
});
export type HeldRow = z.infer<typeof heldRow>;

/** What a recovery did: back-offs cleared, and whether registrations held by the origin are left (locked by another transaction meanwhile). */
export interface Recovery {
  readonly cleared: number;
  readonly remaining: boolean;
}

/**
 * Clears the back-off of every registration held back by the outage of `key`; `onPage` gets
 * each page's rows (to signal those with rows pending) before the next is read.
 */
export async function clearOutageBackoffs(
  pool: DatabasePool,
  key: OriginKey,
  onPage: (rows: readonly HeldRow[]) => Promise<void>,
  page = recoveryPage,
): Promise<Recovery> {
  let cleared = 0;
  for (let pass = 0; pass < maxPasses; pass++) {
    let last = '0';
    let found = 0;
    for (;;) {
      const rows = await pool.any(sql.type(heldRow)`
        WITH held AS (
          SELECT id FROM push_registrations
          WHERE backoff_origin = ${key} AND id > ${last}::int8
          ORDER BY id LIMIT ${page}
          FOR NO KEY UPDATE SKIP LOCKED
        )
        UPDATE push_registrations r SET backoff_until = NULL, backoff_origin = NULL, backoff_reason = NULL
        FROM held WHERE r.id = held.id
        RETURNING r.id::text AS id, r.user_id::text AS user_id, r.device_id, r.transport,
                  EXISTS (SELECT 1 FROM push_pending p WHERE p.registration_id = r.id) AS has_pending`);
      if (rows.length === 0) break;
      found += rows.length;
      // RETURNING keeps no order: the page's largest id is where the next one starts.
      last = rows.reduce((max, r) => (BigInt(r.id) > BigInt(max) ? r.id : max), last);
      await onPage(rows);
      if (rows.length < page) break;
    }
    cleared += found;
    if (found === 0) break;
  }
  const remaining = await pool.exists(sql.unsafe`SELECT 1 FROM push_registrations WHERE backoff_origin = ${key}`);
  return { cleared, remaining };
}

/** Held registrations a probe is chosen among: the first by id. */
const probeCandidates = 16;

/**
 * Lets one held-back registration with rows pending try now (its back-off cleared): its send
 * is the origin's probe. A registration in `deliveredRecently` first (it worked a moment ago,
 * so its send tests the origin, not a dead endpoint); else one of the first held by id. Among
 * the candidates, the one claimed longest ago: its workflow may claim at once, where one that
 * tried a moment ago waits out its minimum interval first. Each statement reads a bounded
 * number of rows by index (the primary key, or (backoff_origin, id)), at any size.
 */
export async function releaseProbe(pool: DatabasePool, key: OriginKey, deliveredRecently: readonly string[]): Promise<HeldRow[]> {
  const release = (candidates: ReturnType<typeof sql.fragment>) =>
    pool.any(sql.type(heldRow)`
      WITH candidate AS (
        SELECT r.id, r.last_woken_at FROM push_registrations r
        WHERE r.backoff_origin = ${key} AND r.backoff_until IS NOT NULL AND ${candidates}
          AND EXISTS (SELECT 1 FROM push_pending p WHERE p.registration_id = r.id)
        ORDER BY r.id LIMIT ${probeCandidates}
      ), held AS (
        SELECT r.id FROM push_registrations r JOIN candidate c ON c.id = r.id
        ORDER BY c.last_woken_at NULLS FIRST, r.id LIMIT 1
        FOR NO KEY UPDATE OF r SKIP LOCKED
      )
      UPDATE push_registrations r SET backoff_until = NULL FROM held WHERE r.id = held.id
      RETURNING r.id::text AS id, r.user_id::text AS user_id, r.device_id, r.transport, true AS has_pending`);
  if (deliveredRecently.length > 0) {
    const preferred = await release(sql.fragment`r.id = ANY(${sql.array(deliveredRecently, 'int8')})`);
    if (preferred.length > 0) return [...preferred];
  }
  return [...(await release(sql.fragment`true`))];
}

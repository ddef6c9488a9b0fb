/**
 * Gauges read from PostgreSQL when Prometheus scrapes the worker: pending rows, and
 * registrations by transport (with those holding an outstanding wake, those woken again and
 * again without a drain, and those whose HIGH wakes arrive lowered). One snapshot serves
 * every gauge of a scrape (and scrapes within `cacheMs`), each count runs under a short
 * statement timeout, and a `push_pending` too large to count in time is reported from the
 * planner's estimate instead — a scrape never loads the database or hangs.
 */
import { Counter, Gauge } from 'prom-client';
import { sql } from 'slonik';
import { z } from 'zod';
import type { DatabasePool } from '../db/pool.js';
import { registry } from '../observability/metrics.js';
import { repeatedlyUndrainedAfter, transportNames } from '../../domain/vocabulary.js';

interface Snapshot {
  readonly pendingRows: number;
  readonly registrations: ReadonlyArray<{
    readonly transport: string;
    readonly count: number;
    readonly outstanding: number;
    readonly repeatedlyUndrained: number;
    readonly priorityLowered: number;
  }>;
}

let source: (() => Promise<Snapshot | undefined>) | undefined;

const pendingRows = new Gauge({
  name: 'push_pending_rows',
  help: 'push_pending rows (one per device and channel with undrained messages), read at scrape time; estimated when too many to count quickly.',
  registers: [registry],
  async collect() {
    const snapshot = await source?.();
    if (snapshot !== undefined) this.set(snapshot.pendingRows);
  },
});

const registrations = new Gauge({
  name: 'push_registrations',
  help: 'Push registrations by transport, read at scrape time.',
  labelNames: ['transport'] as const,
  registers: [registry],
  async collect() {
    const snapshot = await source?.();
    for (const row of snapshot?.registrations ?? []) this.set({ transport: row.transport }, row.count);
  },
});

const outstanding = new Gauge({
  name: 'push_registrations_wake_outstanding',
  help: 'Registrations with a wake sent and not yet drained, by transport, read at scrape time.',
  labelNames: ['transport'] as const,
  registers: [registry],
  async collect() {
    const snapshot = await source?.();
    for (const row of snapshot?.registrations ?? []) this.set({ transport: row.transport }, row.outstanding);
  },
});

const repeatedlyUndrained = new Gauge({
  name: 'push_registrations_repeatedly_undrained',
  help: `Registrations whose provider accepted ${repeatedlyUndrainedAfter} or more wakes in a row without a drain (the wakes do not reach the app, or it cannot drain), by transport, read at scrape time from a partial index.`,
  labelNames: ['transport'] as const,
  registers: [registry],
  async collect() {
    const snapshot = await source?.();
    for (const row of snapshot?.registrations ?? []) this.set({ transport: row.transport }, row.repeatedlyUndrained);
  },
});

const priorityLowered = new Gauge({
  name: 'push_registrations_priority_lowered',
  help: 'Registrations whose phone last reported a HIGH wake delivered as NORMAL (FCM lowered it), by transport, read at scrape time from a partial index.',
  labelNames: ['transport'] as const,
  registers: [registry],
  async collect() {
    const snapshot = await source?.();
    for (const row of snapshot?.registrations ?? []) this.set({ transport: row.transport }, row.priorityLowered);
  },
});

export const collectFailures = new Counter({
  name: 'push_metrics_collect_failures_total',
  help: 'Scrape-time reads (PostgreSQL, Temporal visibility) that failed or timed out (the gauges then keep their last value).',
  registers: [registry],
});

export interface CollectorOptions {
  /** Per-count statement timeout. */
  readonly timeoutMs?: number;
  /** A snapshot younger than this is reused. */
  readonly cacheMs?: number;
}

/** Serves the gauges from `pool` until the returned function is called. */
export function attachDatabaseGauges(pool: DatabasePool, options: CollectorOptions = {}): () => void {
  const timeoutMs = options.timeoutMs ?? 2_000;
  const cacheMs = options.cacheMs ?? 5_000;
  let cached: { at: number; snapshot: Promise<Snapshot | undefined> } | undefined;
  const read = () => {
    if (cached === undefined || Date.now() - cached.at > cacheMs) cached = { at: Date.now(), snapshot: readSnapshot(pool, timeoutMs) };
    return cached.snapshot;
  };
  source = read;
  return () => {
    if (source === read) source = undefined;
    for (const gauge of [pendingRows, registrations, outstanding, repeatedlyUndrained, priorityLowered]) gauge.reset();
  };
}

const registrationRow = z.object({ transport: z.string(), count: z.number(), outstanding: z.number() });
const flaggedRow = z.object({ flag: z.enum(['repeatedly_undrained', 'priority_lowered']), transport: z.string(), count: z.number() });

/**
 * The devices flagged repeatedly undrained or priority lowered, by transport: each count reads
 * the flag's partial index (migration 000031), which holds only flagged devices — its cost
 * follows the devices flagged, not the table (exported for the test that holds it to that).
 */
export const flaggedCounts = sql.type(flaggedRow)`
  SELECT 'repeatedly_undrained' AS flag, transport, count(*)::int AS count FROM push_registrations WHERE repeatedly_undrained GROUP BY transport
  UNION ALL
  SELECT 'priority_lowered' AS flag, transport, count(*)::int AS count FROM push_registrations WHERE priority_lowered GROUP BY transport`;

async function readSnapshot(pool: DatabasePool, timeoutMs: number): Promise<Snapshot | undefined> {
  try {
    const rows = await limited(pool, timeoutMs, (tx) =>
      tx.any(sql.type(registrationRow)`
        SELECT transport, count(*)::int AS count, count(*) FILTER (WHERE wake_outstanding)::int AS outstanding
        FROM push_registrations GROUP BY transport`),
    );
    const flagged = await limited(pool, timeoutMs, (tx) => tx.any(flaggedCounts));
    const pending = await limited(pool, timeoutMs, (tx) =>
      tx.oneFirst(sql.type(z.object({ count: z.number() }))`SELECT count(*)::float8 AS count FROM push_pending`),
    ).catch(() => estimatedRows(pool));
    const flags = (flag: z.infer<typeof flaggedRow>['flag'], transport: string) =>
      flagged.find((r) => r.flag === flag && r.transport === transport)?.count ?? 0;
    // Transports without rows still show 0 rather than vanishing from the graph.
    const all = transportNames.map((transport) => ({
      ...(rows.find((r) => r.transport === transport) ?? { transport, count: 0, outstanding: 0 }),
      repeatedlyUndrained: flags('repeatedly_undrained', transport),
      priorityLowered: flags('priority_lowered', transport),
    }));
    return { pendingRows: pending, registrations: all };
  } catch {
    collectFailures.inc();
    return undefined;
  }
}

type Tx = Parameters<Parameters<DatabasePool['transaction']>[0]>[0];

function limited<T>(pool: DatabasePool, timeoutMs: number, query: (tx: Tx) => Promise<T>): Promise<T> {
  return pool.transaction(async (tx) => {
    await tx.query(sql.unsafe`SELECT set_config('statement_timeout', ${String(timeoutMs)}, true)`);
    return query(tx);
  });
}

/** The planner's row estimate: instant at any size, as fresh as the last ANALYZE. */
async function estimatedRows(pool: DatabasePool): Promise<number> {
  const estimate = await pool.oneFirst(sql.type(z.object({ estimate: z.number() }))`
    SELECT greatest(reltuples, 0)::float8 AS estimate FROM pg_class WHERE oid = 'push_pending'::regclass`);
  return estimate;
}

/**
 * Gauges read from PostgreSQL when Prometheus scrapes the worker: pending rows, and
 * registrations by transport (with those holding an outstanding wake). One snapshot serves
 * every gauge of a scrape (and scrapes within `cacheMs`), each count runs under a short
 * statement timeout, and a `push_pending` too large to count in time is reported from the
 * planner's estimate instead — a scrape never loads the database or hangs.
 */
import { Counter, Gauge } from 'prom-client';
import { sql } from 'slonik';
import { z } from 'zod';
import type { DatabasePool } from '../db/pool.js';
import { registry } from '../metrics.js';
import { transportNames } from '../domain.js';

interface Snapshot {
  readonly pendingRows: number;
  readonly registrations: ReadonlyArray<{ readonly transport: string; readonly count: number; readonly outstanding: number }>;
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
    for (const gauge of [pendingRows, registrations, outstanding]) gauge.reset();
  };
}

const registrationRow = z.object({ transport: z.string(), count: z.number(), outstanding: z.number() });

async function readSnapshot(pool: DatabasePool, timeoutMs: number): Promise<Snapshot | undefined> {
  try {
    const rows = await limited(pool, timeoutMs, (tx) =>
      tx.any(sql.type(registrationRow)`
        SELECT transport, count(*)::int AS count, count(*) FILTER (WHERE wake_outstanding)::int AS outstanding
        FROM push_registrations GROUP BY transport`),
    );
    const pending = await limited(pool, timeoutMs, (tx) =>
      tx.oneFirst(sql.type(z.object({ count: z.number() }))`SELECT count(*)::float8 AS count FROM push_pending`),
    ).catch(() => estimatedRows(pool));
    // Transports without rows still show 0 rather than vanishing from the graph.
    const all = transportNames.map((transport) => rows.find((r) => r.transport === transport) ?? { transport, count: 0, outstanding: 0 });
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

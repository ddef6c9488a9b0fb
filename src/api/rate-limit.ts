/**
 * The api's per-user request limit (50 requests/s across the API), shared by
 * every api replica through PostgreSQL without a database round trip per request.
 *
 * Time is cut into one-second windows. Per user and window, one row of `push_rate_limit`
 * (migration 000025) counts what all replicas have *taken*: requests admitted, and leases —
 * blocks of requests a replica may admit on its own. Each replica:
 *
 *   - admits a user's first `freePerWindow` requests of a window at once, from memory (most
 *     users make one or two requests and never wait for anything);
 *   - admits further requests from a lease; when it has none, the request waits for the next
 *     synchronisation (at most `syncIntervalMs` plus one statement) which asks for one;
 *   - synchronises every `syncIntervalMs` while it has something to tell: one statement for all
 *     its active users records the free admissions and grants leases, never past the limit
 *     (rows locked in key order: no deadlocks between replicas).
 *
 * Tolerance: leases never exceed the limit, so in any window a user is admitted at most
 * `limit + N × freePerWindow` requests by N replicas (50 + 3N: 56 with two). A lease a replica
 * holds unused when the user moves to another replica is lost for that window, so a user
 * switching replicas mid-burst can be refused up to about 1.5 leases per other replica early.
 * Windows are fixed, as with any "per second" count: up to twice the limit can pass within a
 * second that straddles two windows. If PostgreSQL does not answer, each replica limits alone
 * (the limit per replica) until it does.
 */
import type Koa from 'koa';
import { sql } from 'slonik';
import { z } from 'zod';
import type { DatabasePool } from '../db/pool.js';
import type { AuthenticatedState } from './auth.js';
import { ApiError } from './errors.js';
import { rateLimitDegraded, rateLimitSyncs, rateLimitSyncSeconds, rateLimitWaits, rateLimited } from './metrics.js';

export interface RateLimitOptions {
  /** Requests per user per one-second window, across all replicas. */
  readonly perSecond: number;
  /** Milliseconds since the epoch; injectable so tests need not race the clock. */
  readonly now?: () => number;
  /** How often a replica synchronises while it has something to tell (default 25 ms). */
  readonly syncIntervalMs?: number;
  /** Requests per user and window a replica admits before its first synchronisation (default 3). */
  readonly freePerWindow?: number;
  /** Requests per lease (default max(10, limit / 5)). */
  readonly leaseSize?: number;
  /** How long a request waits for a synchronisation before the replica decides alone (default 2 s). */
  readonly waitLimitMs?: number;
}

export const defaultRateLimit: RateLimitOptions = { perSecond: 50 };

export type Decision = { readonly allowed: true } | { readonly allowed: false; readonly retryAfterSeconds: number };

/** One exchange with the shared count: what a replica admitted freely, and the lease it wants. */
export interface Exchange {
  readonly window: number;
  readonly userId: string;
  readonly used: number;
  readonly want: number;
}

export interface ExchangeResult {
  readonly window: number;
  readonly userId: string;
  readonly granted: number;
  /** Everything taken in the window by all replicas, this exchange included. */
  readonly taken: number;
}

/** Where the replicas' counts meet. */
export interface RateLimitStore {
  exchange(limit: number, entries: readonly Exchange[]): Promise<readonly ExchangeResult[]>;
  /** Forgets windows that ended before `window`. */
  forget(window: number): Promise<void>;
}

interface Entry {
  readonly window: number;
  readonly userId: string;
  /** Admitted by this replica in this window (for deciding alone when PostgreSQL is away). */
  admitted: number;
  /** Free admissions: before the first synchronisation only. */
  free: number;
  /** Free admissions not yet recorded in the shared count. */
  unrecorded: number;
  lease: number;
  /** Admitted from the lease since the last synchronisation (a reason to top it up). */
  leaseUsed: number;
  synced: boolean;
  /** The shared count reached the limit: refuse until the window ends. */
  exhausted: boolean;
  readonly waiters: ((decision: Decision) => void)[];
}

const allowed: Decision = { allowed: true };

export class SharedRateLimit {
  private readonly limit: number;
  private readonly now: () => number;
  private readonly syncIntervalMs: number;
  private readonly freePerWindow: number;
  private readonly leaseSize: number;
  private readonly waitLimitMs: number;
  private readonly entries = new Map<string, Entry>();
  private timer: NodeJS.Timeout | undefined;
  private syncing: Promise<void> | undefined;
  /** Until when this replica decides alone (the last synchronisation failed). */
  private aloneUntil = 0;
  private forgottenBefore = 0;
  private closed = false;

  constructor(
    private readonly store: RateLimitStore,
    options: RateLimitOptions,
  ) {
    this.limit = options.perSecond;
    this.now = options.now ?? Date.now;
    this.syncIntervalMs = options.syncIntervalMs ?? 25;
    this.freePerWindow = Math.min(options.freePerWindow ?? 3, this.limit);
    this.leaseSize = options.leaseSize ?? Math.max(10, Math.ceil(this.limit / 5));
    this.waitLimitMs = options.waitLimitMs ?? 2_000;
  }

  /** The decision for one request of `userId`: at once when memory suffices, else after the next synchronisation. */
  take(userId: string): Decision | Promise<Decision> {
    const now = this.now();
    const window = Math.floor(now / 1000);
    const entry = this.entry(window, userId);
    if (entry.lease > 0) {
      entry.lease--;
      entry.leaseUsed++;
      if (entry.lease <= this.leaseSize / 2) this.scheduleSync(); // top it up before it runs out
      return this.admit(entry);
    }
    if (entry.exhausted) return this.refuse(now);
    if (!entry.synced && entry.free < this.freePerWindow) {
      entry.free++;
      entry.unrecorded++;
      this.scheduleSync();
      return this.admit(entry);
    }
    if (now < this.aloneUntil) return this.alone(entry, now);
    rateLimitWaits.inc();
    return new Promise<Decision>((resolve) => {
      const timeout = setTimeout(() => {
        const i = entry.waiters.indexOf(settle);
        if (i >= 0) entry.waiters.splice(i, 1);
        resolve(this.alone(entry, this.now()));
      }, this.waitLimitMs);
      const settle = (decision: Decision) => {
        clearTimeout(timeout);
        resolve(decision);
      };
      entry.waiters.push(settle);
      this.scheduleSync();
    });
  }

  /** Users tracked in memory (the current and the previous window only). */
  get size(): number {
    return this.entries.size;
  }

  /** Synchronises now (tests; the timer calls it otherwise). */
  async syncNow(): Promise<void> {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    while (this.syncing !== undefined) await this.syncing;
    this.syncing = this.sync().finally(() => (this.syncing = undefined));
    await this.syncing;
  }

  /** Stops synchronising; waiting requests are decided alone. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    await this.syncing;
    for (const entry of this.entries.values()) for (const waiter of entry.waiters.splice(0)) waiter(this.alone(entry, this.now()));
  }

  private entry(window: number, userId: string): Entry {
    const key = `${window}:${userId}`;
    let entry = this.entries.get(key);
    if (entry === undefined) {
      entry = { window, userId, admitted: 0, free: 0, unrecorded: 0, lease: 0, leaseUsed: 0, synced: false, exhausted: false, waiters: [] };
      this.entries.set(key, entry);
    }
    return entry;
  }

  private admit(entry: Entry): Decision {
    entry.admitted++;
    return allowed;
  }

  private refuse(now: number): Decision {
    rateLimited.inc();
    const secondsToNextWindow = (Math.floor(now / 1000) + 1) * 1000 - now;
    return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(secondsToNextWindow / 1000)) };
  }

  /** Without PostgreSQL: this replica's own count against the limit. */
  private alone(entry: Entry, now: number): Decision {
    rateLimitDegraded.inc();
    return entry.admitted < this.limit && !entry.exhausted ? this.admit(entry) : this.refuse(now);
  }

  private scheduleSync(): void {
    if (this.timer !== undefined || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.syncNow().catch(() => undefined); // sync() handles its own failures
    }, this.syncIntervalMs);
    this.timer.unref();
  }

  private async sync(): Promise<void> {
    const currentWindow = Math.floor(this.now() / 1000);
    const exchanges: { entry: Entry; exchange: Exchange }[] = [];
    for (const [key, entry] of this.entries) {
      // Windows that are over are forgotten; their waiters (if any) are still answered below.
      if (entry.window < currentWindow - 1 && entry.waiters.length === 0) {
        this.entries.delete(key);
        continue;
      }
      // A lease when requests wait, when one runs low, or when the free admissions are used up
      // (a user that busy in one second is likely to go on).
      const needsLease =
        entry.waiters.length > 0 || (entry.leaseUsed > 0 && entry.lease <= this.leaseSize / 2) || (!entry.synced && entry.free >= this.freePerWindow);
      const want = entry.exhausted || !needsLease ? 0 : Math.min(Math.max(this.leaseSize, entry.waiters.length), this.limit);
      if (entry.unrecorded === 0 && want === 0) continue;
      exchanges.push({ entry, exchange: { window: entry.window, userId: entry.userId, used: entry.unrecorded, want } });
    }
    if (exchanges.length > 0) {
      const end = rateLimitSyncSeconds.startTimer();
      let results: readonly ExchangeResult[];
      try {
        results = await this.store.exchange(
          this.limit,
          exchanges.map((e) => e.exchange),
        );
        rateLimitSyncs.inc({ outcome: 'ok' });
      } catch {
        rateLimitSyncs.inc({ outcome: 'failed' });
        this.aloneUntil = this.now() + 1_000;
        for (const { entry } of exchanges) for (const waiter of entry.waiters.splice(0)) waiter(this.alone(entry, this.now()));
        return;
      } finally {
        end();
      }
      const byKey = new Map(results.map((r) => [`${r.window}:${r.userId}`, r]));
      for (const { entry, exchange } of exchanges) {
        const result = byKey.get(`${entry.window}:${entry.userId}`);
        if (result === undefined) continue;
        entry.synced = true;
        entry.unrecorded -= exchange.used;
        entry.lease += result.granted;
        entry.leaseUsed = 0;
        if (result.taken >= this.limit) entry.exhausted = true; // what lease is left is still used
        while (entry.lease > 0 && entry.waiters.length > 0) {
          entry.lease--;
          entry.waiters.shift()!(this.admit(entry));
        }
        if (entry.waiters.length > 0 && entry.exhausted) for (const waiter of entry.waiters.splice(0)) waiter(this.refuse(this.now()));
      }
    }
    if (currentWindow - this.forgottenBefore >= 10) {
      this.forgottenBefore = currentWindow - 2;
      await this.store.forget(this.forgottenBefore).catch(() => undefined);
    }
    if ([...this.entries.values()].some((e) => e.waiters.length > 0 || e.unrecorded > 0)) this.scheduleSync();
  }
}

/** The shared count in PostgreSQL: one row per user and window, in an unlogged table. */
export function postgresRateLimitStore(pool: DatabasePool): RateLimitStore {
  const resultRow = z.object({ window_start: z.string(), user_id: z.string(), granted: z.number(), taken: z.number() });
  return {
    async exchange(limit, entries) {
      // The proposed row is what a first exchange takes (used + want, all of `want` granted);
      // on conflict the lease is cut to what the limit leaves. `want` ≤ limit − used always.
      const sorted = [...entries].sort((a, b) => a.window - b.window || (a.userId < b.userId ? -1 : a.userId > b.userId ? 1 : 0));
      const rows = await pool.any(sql.type(resultRow)`
        INSERT INTO push_rate_limit AS t (window_start, user_id, taken, granted)
        SELECT x.window_start, x.user_id, x.used + least(x.want, greatest(0, ${limit} - x.used)), least(x.want, greatest(0, ${limit} - x.used))
        FROM unnest(${sql.array(
          sorted.map((e) => e.window),
          'int8',
        )}, ${sql.array(
          sorted.map((e) => e.userId),
          'text',
        )},
                    ${sql.array(
                      sorted.map((e) => e.used),
                      'int4',
                    )}, ${sql.array(
                      sorted.map((e) => e.want),
                      'int4',
                    )})
             WITH ORDINALITY AS x(window_start, user_id, used, want, n)
        ORDER BY x.n
        ON CONFLICT (window_start, user_id) DO UPDATE SET
          granted = least(excluded.granted, greatest(0, ${limit} - (t.taken + excluded.taken - excluded.granted))),
          taken = t.taken + excluded.taken - excluded.granted
                  + least(excluded.granted, greatest(0, ${limit} - (t.taken + excluded.taken - excluded.granted)))
        RETURNING t.window_start::text AS window_start, t.user_id, t.granted, t.taken`);
      return rows.map((r) => ({ window: Number(r.window_start), userId: r.user_id, granted: r.granted, taken: r.taken }));
    },
    async forget(window) {
      await pool.query(sql.unsafe`DELETE FROM push_rate_limit WHERE window_start < ${window}`);
    },
  };
}

/** Koa middleware, after authentication: one request of the calling user. */
export function rateLimitPerUser(limit: SharedRateLimit): Koa.Middleware<AuthenticatedState> {
  return async (ctx, next) => {
    const taken = limit.take(ctx.state.device.userId);
    const decision = taken instanceof Promise ? await taken : taken;
    if (!decision.allowed) {
      throw new ApiError('rate_limited', 'too many requests; retry later', { 'Retry-After': String(decision.retryAfterSeconds) });
    }
    await next();
  };
}

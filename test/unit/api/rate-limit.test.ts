import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SharedRateLimit, type Decision, type Exchange, type ExchangeResult, type RateLimitStore } from '../../../src/api/rate-limit.js';

/** The PostgreSQL store's rule, in memory: leases never take a window past the limit. */
function memoryStore(): RateLimitStore & { taken(window: number, userId: string): number; failing: boolean } {
  const rows = new Map<string, number>();
  const store = {
    failing: false,
    taken: (window: number, userId: string) => rows.get(`${window}:${userId}`) ?? 0,
    async exchange(limit: number, entries: readonly Exchange[]): Promise<readonly ExchangeResult[]> {
      if (store.failing) throw new Error('connection refused');
      return entries.map((e) => {
        const key = `${e.window}:${e.userId}`;
        const base = (rows.get(key) ?? 0) + e.used;
        const granted = Math.min(e.want, Math.max(0, limit - base));
        rows.set(key, base + granted);
        return { window: e.window, userId: e.userId, granted, taken: base + granted };
      });
    },
    async forget(window: number) {
      for (const key of rows.keys()) if (Number(key.split(':')[0]) < window) rows.delete(key);
    },
  };
  return store;
}

function clock(start = 1_000_000_000) {
  let now = start;
  return { now: () => now, advance: (ms: number) => void (now += ms) };
}

/** Synchronisation only when the test says so. */
const manual = { syncIntervalMs: 1e9, waitLimitMs: 1e9 };

/** Every request's decision, waiting ones included, once `settle` has run. */
class Requests {
  readonly decisions: (Decision | undefined)[] = [];
  take(limit: SharedRateLimit, userId: string): void {
    const i = this.decisions.push(undefined) - 1;
    const taken = limit.take(userId);
    if (taken instanceof Promise) void taken.then((d) => (this.decisions[i] = d));
    else this.decisions[i] = taken;
  }
  get allowed(): number {
    return this.decisions.filter((d) => d?.allowed === true).length;
  }
  get waiting(): number {
    return this.decisions.filter((d) => d === undefined).length;
  }
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

describe('SharedRateLimit', () => {
  it('answers a user’s first requests of a window at once, from memory', () => {
    const limit = new SharedRateLimit(memoryStore(), { perSecond: 50, now: clock().now, ...manual });
    for (let i = 0; i < 3; i++) expect(limit.take('u1')).toEqual({ allowed: true });
    expect(limit.take('u1')).toBeInstanceOf(Promise);
    expect(limit.take('u2')).toEqual({ allowed: true });
  });

  it('admits exactly the limit in a window on one replica, then 429 with Retry-After until the next window', async () => {
    const time = clock();
    const limit = new SharedRateLimit(memoryStore(), { perSecond: 50, now: time.now, ...manual });
    const requests = new Requests();
    for (let i = 0; i < 60; i++) requests.take(limit, 'u1');
    for (let round = 0; round < 10 && requests.waiting > 0; round++) {
      await limit.syncNow();
      await flush();
    }
    expect(requests.allowed).toBe(50);
    expect(requests.decisions.filter((d) => d?.allowed === false)).toEqual(Array(10).fill({ allowed: false, retryAfterSeconds: 1 }));
    expect(limit.take('u1')).toEqual({ allowed: false, retryAfterSeconds: 1 });
    time.advance(1_000);
    expect(limit.take('u1')).toEqual({ allowed: true });
  });

  it('holds across replicas: never more than the limit plus each replica’s free admissions in a window, however requests and synchronisations interleave', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 2, max: 4 }),
        fc.array(fc.oneof(fc.record({ request: fc.nat(3) }), fc.record({ sync: fc.nat(3) })), { minLength: 50, maxLength: 400 }),
        async (replicas, steps) => {
          const store = memoryStore();
          const time = clock();
          const limits = Array.from({ length: replicas }, () => new SharedRateLimit(store, { perSecond: 50, now: time.now, ...manual }));
          const requests = new Requests();
          for (const step of steps) {
            if ('request' in step) requests.take(limits[step.request % replicas]!, 'runaway');
            else await limits[step.sync % replicas]!.syncNow();
          }
          for (let round = 0; round < 20 && requests.waiting > 0; round++) {
            for (const limit of limits) await limit.syncNow();
            await flush();
          }
          expect(requests.waiting).toBe(0);
          expect(requests.allowed).toBeLessThanOrEqual(50 + replicas * 3);
          // …and it does not refuse early by much: only leases held unused by other replicas are lost.
          expect(requests.allowed).toBeGreaterThanOrEqual(Math.min(requests.decisions.length, 50 - (replicas - 1) * 15));
        },
      ),
      { numRuns: 200 },
    );
  });

  it('decides alone, with the limit per replica, while the store does not answer', async () => {
    const store = memoryStore();
    store.failing = true;
    const limit = new SharedRateLimit(store, { perSecond: 5, now: clock().now, ...manual });
    const requests = new Requests();
    for (let i = 0; i < 8; i++) requests.take(limit, 'u1');
    await limit.syncNow();
    await flush();
    for (let i = 0; i < 2; i++) requests.take(limit, 'u1'); // decided at once now, without waiting
    expect(requests.waiting).toBe(0);
    expect(requests.allowed).toBe(5);
  });

  it('forgets windows that are over, so memory follows active users', async () => {
    const time = clock();
    const limit = new SharedRateLimit(memoryStore(), { perSecond: 50, now: time.now, ...manual });
    // Each take's answer is not what this test looks at: only what the limiter keeps in memory.
    for (let i = 0; i < 999; i++) void limit.take(`user-${i}`);
    await limit.syncNow();
    expect(limit.size).toBe(999);
    time.advance(5_000);
    void limit.take('someone');
    await limit.syncNow();
    expect(limit.size).toBe(1);
  });
});

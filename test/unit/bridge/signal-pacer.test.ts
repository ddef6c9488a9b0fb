/**
 * The pacer against a simulated task queue: signals join a first-in-first-out backlog that a
 * worker takes from at a fixed rate; `pending` says whether a device's task is still in it.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { PacerStoppedError, SignalPacer } from '../../../src/bridge/signal-pacer.js';
import type { DeviceToSignal } from '../../../src/bridge/signal-pending.js';

const device = (server: string, i: number): DeviceToSignal => ({ userId: `${server}-${i}`, deviceId: 'phone', transport: 'unifiedpush' });
const devices = (server: string, n: number) => Array.from({ length: n }, (_, i) => device(server, i));

/** A task queue served in order by a worker taking one task every `everyMs` (never, when undefined). */
function taskQueue(everyMs: number | undefined) {
  const backlog: string[] = [];
  const sent: string[] = [];
  let largest = 0;
  const timer = everyMs === undefined ? undefined : setInterval(() => backlog.shift(), everyMs);
  return {
    sent,
    backlog,
    largestBacklog: () => largest,
    deps: {
      send: async (d: DeviceToSignal) => {
        sent.push(d.userId);
        backlog.push(d.userId);
        largest = Math.max(largest, backlog.length);
      },
      pending: async (d: DeviceToSignal) => backlog.includes(d.userId),
    },
    stop: () => clearInterval(timer),
  };
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('SignalPacer', () => {
  it('serves servers in turn: a small server is not held behind a large one', async () => {
    const queue = taskQueue(10);
    const pacer = new SignalPacer(queue.deps, { targetDelayMs: 500, concurrency: 16 });
    const large = pacer.submit('large', devices('large', 1_000));
    const small = pacer.submit('small', devices('small', 20));
    await vi.advanceTimersByTimeAsync(30_000);
    expect(await small).toEqual([]);
    expect(await large).toEqual([]);
    const lastSmall = queue.sent.findLastIndex((id) => id.startsWith('small'));
    // One window went out before the small server queued; after that the two take turns.
    expect(lastSmall).toBeLessThan(32 + 2 * 20);
    expect(queue.sent).toHaveLength(1_020);
    queue.stop();
  });

  it('sends one window to a worker that takes nothing, and fails the rest when stopped', async () => {
    const queue = taskQueue(undefined);
    const pacer = new SignalPacer(queue.deps, { targetDelayMs: 500, concurrency: 16, initialWindow: 32 });
    const submitted = pacer.submit('large', devices('large', 2_000));
    await vi.advanceTimersByTimeAsync(60_000);
    expect(queue.sent).toHaveLength(32);
    pacer.stop();
    const failures = await submitted;
    expect(failures).toHaveLength(2_000 - 32);
    expect(failures.every((f) => f instanceof PacerStoppedError)).toBe(true);
    expect(await pacer.submit('late', devices('late', 3))).toHaveLength(3);
  });

  it('goes on when Temporal never answers a describe', async () => {
    const queue = taskQueue(5);
    const pacer = new SignalPacer({ ...queue.deps, pending: () => new Promise<boolean>(() => undefined) }, { targetDelayMs: 500, concurrency: 16 });
    const submitted = pacer.submit('large', devices('large', 500));
    await vi.advanceTimersByTimeAsync(180_000);
    expect(await submitted).toEqual([]);
    queue.stop();
  });

  it('keeps the worker busy and its backlog near the target', async () => {
    const queue = taskQueue(5); // 200 tasks a second
    const pacer = new SignalPacer(queue.deps, { targetDelayMs: 500, concurrency: 16 });
    const started = Date.now();
    const submitted = pacer.submit('large', devices('large', 6_000));
    let finished: number | undefined;
    void submitted.then(() => (finished = Date.now()));
    await vi.advanceTimersByTimeAsync(60_000);
    expect(await submitted).toEqual([]);
    // The worker alone needs 30 s; the pacer costs it no more than a tenth.
    expect(finished! - started).toBeLessThan(33_000);
    // Backlog ≤ about twice the target's worth (0.5 s × 200/s = 100 tasks).
    expect(queue.largestBacklog()).toBeLessThanOrEqual(200);
    queue.stop();
  });
});

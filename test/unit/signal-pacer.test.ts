/**
 * The pacer against a simulated task queue: signals join a first-in-first-out backlog that a
 * worker takes from at a fixed rate; `pending` says whether a device's task is still in it.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { PacerStoppedError, SignalPacer } from '../../src/signal-pacer.js';
import type { DeviceToSignal } from '../../src/domain.js';

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

/**
 * A worker with `slots` tasks at once, each taking `processingMs` (its claim and send) after it
 * left the queue; a task is pending until it is done.
 */
function busyWorker(slots: number, processingMs: number) {
  const queued: string[] = [];
  const running = new Set<string>();
  let done = 0;
  const take = () => {
    while (running.size < slots && queued.length > 0) {
      const task = queued.shift()!;
      running.add(task);
      setTimeout(() => {
        running.delete(task);
        done++;
        take();
      }, processingMs);
    }
  };
  return {
    done: () => done,
    deps: {
      send: async (d: DeviceToSignal) => {
        queued.push(d.userId);
        take();
      },
      pending: async (d: DeviceToSignal) => queued.includes(d.userId) || running.has(d.userId),
    },
  };
}

/**
 * An engine that works through one task at a time, `serviceMs` each, in order; a signal's task
 * reaches its queue `transitMs` after the signal was accepted (the engine's own round trips). A
 * pacer that waits with every signal until the newest is done leaves it idle for that long.
 */
function servingEngine(serviceMs: number, transitMs: number) {
  const queued: string[] = [];
  const inTransit = new Set<string>();
  let busy = false;
  let done = 0;
  const serve = () => {
    if (busy || queued.length === 0) return;
    busy = true;
    setTimeout(() => {
      queued.shift();
      done++;
      busy = false;
      serve();
    }, serviceMs);
  };
  return {
    done: () => done,
    deps: {
      send: async (d: DeviceToSignal) => {
        inTransit.add(d.userId);
        setTimeout(() => {
          inTransit.delete(d.userId);
          queued.push(d.userId);
          serve();
        }, transitMs);
      },
      pending: async (d: DeviceToSignal) => inTransit.has(d.userId) || queued.includes(d.userId),
    },
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

  it("keeps a slow worker's slots full: its own time for a task is not backlog", async () => {
    // 40 slots, 800 ms a task: 50 tasks a second, each done 800 ms after it was taken.
    const worker = busyWorker(40, 800);
    const pacer = new SignalPacer(worker.deps, { targetDelayMs: 250, concurrency: 16 });
    void pacer.submit('large', devices('large', 10_000));
    await vi.advanceTimersByTimeAsync(20_000); // the window finds its size
    const before = worker.done();
    await vi.advanceTimersByTimeAsync(60_000);
    // Forgiving only the target's worth, the window sat at its floor: 24 tasks in flight, 30 a
    // second. The controller's own swings cost some; the benchmark judges the real engines.
    expect((worker.done() - before) / 60).toBeGreaterThan(0.8 * 50);
    pacer.stop();
  });

  it('keeps the engine busy while it samples: the window refills before its newest signal is done', async () => {
    // 40 tasks a second, each reaching the queue 150 ms after its signal.
    const engine = servingEngine(25, 150);
    const pacer = new SignalPacer(engine.deps, { targetDelayMs: 250, concurrency: 16 });
    void pacer.submit('large', devices('large', 5_000));
    await vi.advanceTimersByTimeAsync(10_000);
    const before = engine.done();
    await vi.advanceTimersByTimeAsync(60_000);
    expect((engine.done() - before) / 60).toBeGreaterThan(0.95 * 40);
    pacer.stop();
  });

  it('does not grow the window on its first sample, which is its own base', async () => {
    // 20 tasks a second: the first window (32) is already 1.6 s of work, far above the target.
    const queue = taskQueue(50);
    const windows: number[] = [];
    const pacer = new SignalPacer(
      { ...queue.deps, sampled: (s) => windows.push(s.window) },
      { targetDelayMs: 250, concurrency: 16, initialWindow: 32 },
    );
    void pacer.submit('large', devices('large', 1_000));
    await vi.advanceTimersByTimeAsync(20_000);
    expect(windows.length).toBeGreaterThan(3);
    expect(Math.max(...windows)).toBeLessThanOrEqual(32);
    pacer.stop();
    queue.stop();
  });
});

/**
 * The pacer's loop (src/pacing/pacer.ts) against simulated engines on fake timers: signals join
 * a backlog that workers take from; `workflowTask` says what a describe would. What is checked
 * is what its users rely on — turns, nothing lost, the workers kept busy, a backlog near the
 * target, sending that goes on whatever state some workflows are in — and the window's own
 * moves are the law's table tests (window-law.test.ts).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { PacerStoppedError, SignalPacer, type PacerObserver, type WorkflowTaskSeen } from '../../../src/pacing/pacer.js';
import type { DeviceToSignal } from '../../../domain/vocabulary.js';

const device = (server: string, i: number): DeviceToSignal => ({ userId: `${server}-${i}`, deviceId: 'phone', transport: 'unifiedpush' });
const devices = (server: string, n: number) => Array.from({ length: n }, (_, i) => device(server, i));

/**
 * What a workflow does with its task: finishes it when a worker takes it; fails it on every
 * attempt (a nondeterminism, a type no worker knows); has it on another task queue (no worker of
 * ours will take it); or has it in our queue and never taken (the describe cannot tell that from
 * a backlog: only the marker's bound can).
 */
type Fate = 'works' | 'fails' | 'elsewhere' | 'never taken';

/** A task queue served in order by a worker taking one task every `everyMs` (never, when undefined). */
function taskQueue(everyMs: number | undefined, fate: (id: string) => Fate = () => 'works') {
  const backlog: string[] = [];
  const failing = new Set<string>();
  const sent: string[] = [];
  let largest = 0;
  const timer =
    everyMs === undefined
      ? undefined
      : setInterval(() => {
          const taken = backlog.shift();
          if (taken !== undefined && fate(taken) === 'fails') failing.add(taken);
        }, everyMs);
  return {
    sent,
    backlog,
    largestBacklog: () => largest,
    deps: {
      send: async (d: DeviceToSignal) => {
        sent.push(d.userId);
        if (fate(d.userId) === 'elsewhere' || fate(d.userId) === 'never taken') return;
        backlog.push(d.userId);
        largest = Math.max(largest, backlog.length);
      },
      workflowTask: async (d: DeviceToSignal): Promise<WorkflowTaskSeen> => {
        if (failing.has(d.userId) || fate(d.userId) === 'elsewhere') return 'wedged';
        return backlog.includes(d.userId) || fate(d.userId) === 'never taken' ? 'waiting' : 'none';
      },
    },
    stop: () => clearInterval(timer),
  };
}

/**
 * A worker with `slots` tasks at once, each taking `processingMs` (its claim and send) after it
 * left the queue; a task is there until it is done.
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
      workflowTask: async (d: DeviceToSignal): Promise<WorkflowTaskSeen> => (queued.includes(d.userId) || running.has(d.userId) ? 'waiting' : 'none'),
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
      workflowTask: async (d: DeviceToSignal): Promise<WorkflowTaskSeen> =>
        inTransit.has(d.userId) || queued.includes(d.userId) ? 'waiting' : 'none',
    },
  };
}

/** `share` of the ids, chosen by a fixed pseudo-random sequence (the same every run). */
function someOf(ids: readonly string[], share: number): Set<string> {
  let seed = 42;
  const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
  return new Set(ids.filter(() => random() < share));
}

/** Resolves the time (fake clock) at which `promise` settled, or undefined if it did not within `ms`. */
async function finishedWithin(promise: Promise<unknown>, ms: number): Promise<number | undefined> {
  const started = Date.now();
  let finished: number | undefined;
  void promise.then(() => (finished = Date.now() - started));
  await vi.advanceTimersByTimeAsync(ms);
  return finished;
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('SignalPacer', () => {
  it('serves keys in turn: a small server is not held behind a large one', async () => {
    const queue = taskQueue(10);
    const pacer = new SignalPacer(queue.deps, { targetMs: 500, concurrency: 16 });
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

  it('keeps the worker busy and its backlog near the target', async () => {
    const queue = taskQueue(5); // 200 tasks a second
    const pacer = new SignalPacer(queue.deps, { targetMs: 500, concurrency: 16 });
    const submitted = pacer.submit('large', devices('large', 6_000));
    // The worker alone needs 30 s; the pacer costs it no more than a tenth.
    expect(await finishedWithin(submitted, 60_000)).toBeLessThan(33_000);
    expect(await submitted).toEqual([]);
    // Backlog ≤ about twice the target's worth (0.5 s × 200/s = 100 tasks).
    expect(queue.largestBacklog()).toBeLessThanOrEqual(200);
    queue.stop();
  });

  it("keeps a slow worker's slots full: its own time for a task is not backlog", async () => {
    // 40 slots, 800 ms a task: 50 tasks a second, each done 800 ms after it was taken.
    const worker = busyWorker(40, 800);
    const pacer = new SignalPacer(worker.deps, { targetMs: 250, concurrency: 16 });
    void pacer.submit('large', devices('large', 10_000));
    await vi.advanceTimersByTimeAsync(20_000); // the window finds its size
    const before = worker.done();
    await vi.advanceTimersByTimeAsync(60_000);
    expect((worker.done() - before) / 60).toBeGreaterThan(0.8 * 50);
    pacer.stop();
  });

  it('keeps the engine busy while it samples: the window refills before its newest signal is done', async () => {
    // 40 tasks a second, each reaching the queue 150 ms after its signal.
    const engine = servingEngine(25, 150);
    const pacer = new SignalPacer(engine.deps, { targetMs: 250, concurrency: 16 });
    void pacer.submit('large', devices('large', 5_000));
    await vi.advanceTimersByTimeAsync(10_000);
    const before = engine.done();
    await vi.advanceTimersByTimeAsync(60_000);
    expect((engine.done() - before) / 60).toBeGreaterThan(0.95 * 40);
    pacer.stop();
  });

  it.each([800, 300])(
    'does not slow an idle engine down at its start: 200 signals to 40 slots taking %i ms a task are done within 1.25 × the slots alone',
    async (taskMs) => {
      // The slots alone take 5 × a task's time. Growing a third at a time from a window of 24,
      // sampled only by markers sent into a full window, took 7 (6.5 when 300 ms) task times:
      // a short fan-out ran at 0.71 of the workers' rate.
      const worker = busyWorker(40, taskMs);
      const pacer = new SignalPacer(worker.deps, { targetMs: 250, concurrency: 16 });
      const started = Date.now();
      void pacer.submit('large', devices('large', 200));
      let doneAt: number | undefined;
      for (let t = 0; t < 30_000 && doneAt === undefined; t += 50) {
        await vi.advanceTimersByTimeAsync(50);
        if (worker.done() === 200) doneAt = Date.now() - started;
      }
      expect(doneAt).toBeLessThanOrEqual(1.25 * 5 * taskMs);
    },
  );

  it('does not grow the window on markers that waited behind nothing: a fan-out that finds the engine empty', async () => {
    // 60 tasks a second, in order, each reaching the queue 200 ms after its signal: 24 signals
    // are about the target's worth of backlog, 48 well above it. A small fan-out grows the window
    // to 48 and ends; a large one follows on the emptied engine. Its first markers, at the front
    // of their window, wait behind nothing; taken for the window's backlog, they doubled it.
    const engine = servingEngine(1_000 / 60, 200);
    const windows: number[] = [];
    const pacer = new SignalPacer({ ...engine.deps, observer: { sampled: (s) => windows.push(s.window) } }, { targetMs: 250, concurrency: 16 });
    const small = pacer.submit('small', devices('small', 40));
    await vi.advanceTimersByTimeAsync(5_000);
    expect(await small).toEqual([]);
    const before = pacer.view().window;
    expect(before).toBe(48);
    void pacer.submit('large', devices('large', 1_000));
    await vi.advanceTimersByTimeAsync(15_000);
    expect(Math.max(...windows)).toBe(before);
    pacer.stop();
  });

  it('does not grow the window on its first sample, which is its own base', async () => {
    // 20 tasks a second: the first window (32) is already 1.6 s of work, far above the target.
    const queue = taskQueue(50);
    const windows: number[] = [];
    const pacer = new SignalPacer(
      { ...queue.deps, observer: { sampled: (s) => windows.push(s.window) } },
      { targetMs: 250, concurrency: 16, initialWindow: 32 },
    );
    void pacer.submit('large', devices('large', 1_000));
    await vi.advanceTimersByTimeAsync(20_000);
    expect(windows.length).toBeGreaterThan(3);
    expect(Math.max(...windows)).toBeLessThanOrEqual(32);
    pacer.stop();
    queue.stop();
  });

  it('lets a worker that takes nothing receive one window and a handful more an hour; stopping fails the rest', async () => {
    const queue = taskQueue(undefined);
    const pacer = new SignalPacer(queue.deps, { targetMs: 500, concurrency: 16, initialWindow: 32 });
    const submitted = pacer.submit('large', devices('large', 2_000));
    await vi.advanceTimersByTimeAsync(60_000);
    expect(queue.sent.length).toBeGreaterThanOrEqual(32);
    expect(queue.sent.length).toBeLessThanOrEqual(32 + 6);
    await vi.advanceTimersByTimeAsync(3_600_000);
    expect(queue.sent.length).toBeLessThanOrEqual(32 + 25);
    const sent = queue.sent.length;
    pacer.stop();
    const failures = await submitted;
    expect(failures).toHaveLength(2_000 - sent);
    expect(failures.every((f) => f.error instanceof PacerStoppedError)).toBe(true);
    expect(await pacer.submit('late', devices('late', 3))).toHaveLength(3);
  });

  describe('goes on sending whatever state some workflows are in', () => {
    const ids = devices('large', 6_000).map((d) => d.userId);

    it.each([
      ['1 %', 'fails on every attempt', 'fails', 0.01],
      ['5 %', 'fails on every attempt', 'fails', 0.05],
      ['1 %', 'waits on another task queue', 'elsewhere', 0.01],
      ['5 %', 'waits on another task queue', 'elsewhere', 0.05],
      ['1 %', 'is never taken from ours', 'never taken', 0.01],
      ['5 %', 'is never taken from ours', 'never taken', 0.05],
    ] as const)('%s of the devices, whose workflow task %s', async (_share, _what, fate, share) => {
      const wedged = someOf(ids, share);
      const queue = taskQueue(5, (id) => (wedged.has(id) ? fate : 'works'));
      const pacer = new SignalPacer(queue.deps, { targetMs: 500, concurrency: 16 });
      const submitted = pacer.submit('large', devices('large', 6_000));
      // The worker alone needs 30 s (without the tasks that never come to it).
      expect(await finishedWithin(submitted, 120_000)).toBeLessThan(60_000);
      expect(await submitted).toEqual([]);
      expect(queue.sent).toHaveLength(6_000);
      queue.stop();
    });

    it.each([
      ['fail on every attempt', 'fails'],
      ['wait on another task queue', 'elsewhere'],
    ] as const)('a run of 50 devices in a row, more than the whole window, whose tasks %s', async (_what, fate) => {
      const queue = taskQueue(5, (id) => (Number(id.split('-')[1]) >= 100 && Number(id.split('-')[1]) < 150 ? fate : 'works'));
      const givenUp: string[] = [];
      const pacer = new SignalPacer(
        { ...queue.deps, observer: { markerGivenUp: (reason) => givenUp.push(reason) } },
        {
          targetMs: 500,
          concurrency: 16,
          maxWindow: 24,
        },
      );
      const submitted = pacer.submit('large', devices('large', 1_000));
      expect(await finishedWithin(submitted, 300_000)).toBeDefined();
      expect(queue.sent).toHaveLength(1_000);
      expect(givenUp.length).toBeGreaterThan(0);
      expect(new Set(givenUp)).toEqual(new Set(['wedged']));
      queue.stop();
    });
  });

  describe('a describe that fails', () => {
    it('never stalls the signals, and is told once per episode', async () => {
      const queue = taskQueue(5);
      const told: string[] = [];
      const observer: PacerObserver = {
        describeFailed: (_error, first) => void (first && told.push('blind')),
        describesRecovered: (failed) => told.push(`sees again after ${failed}`),
      };
      const pacer = new SignalPacer(
        { ...queue.deps, workflowTask: () => new Promise<WorkflowTaskSeen>(() => undefined), observer },
        { targetMs: 500, concurrency: 16 },
      );
      const submitted = pacer.submit('large', devices('large', 500));
      await vi.advanceTimersByTimeAsync(180_000);
      expect(await submitted).toEqual([]);
      expect(told).toEqual(['blind']);
      expect(pacer.view().blind).toBe(true);
      queue.stop();
    });

    it('ends its episode at the next answer, and a later failure starts another', async () => {
      const queue = taskQueue(5);
      let failing = true;
      const events: string[] = [];
      let failures = 0;
      const pacer = new SignalPacer(
        {
          ...queue.deps,
          workflowTask: (d) => (failing ? Promise.reject(new Error('PermissionDenied')) : queue.deps.workflowTask(d)),
          observer: {
            describeFailed: (_error, first) => {
              failures++;
              if (first) events.push('blind');
            },
            describesRecovered: (failed) => events.push(`sees again after ${failed}`),
          },
        },
        { targetMs: 500, concurrency: 16 },
      );
      const phase = async (name: string) => {
        const submitted = pacer.submit(name, devices(name, 200));
        await vi.advanceTimersByTimeAsync(10_000);
        expect(await submitted).toEqual([]);
      };
      await phase('first');
      expect(events).toEqual(['blind']);
      expect(pacer.view().blind).toBe(true);
      failing = false;
      await phase('second');
      expect(events).toEqual(['blind', `sees again after ${failures}`]);
      expect(failures).toBeGreaterThan(1);
      expect(pacer.view().blind).toBe(false);
      failing = true;
      await phase('third');
      expect(events).toEqual(['blind', expect.stringMatching(/^sees again/), 'blind']);
      pacer.stop();
      queue.stop();
    });
  });
});

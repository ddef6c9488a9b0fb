import { describe, expect, it } from 'vitest';
import { Semaphore, settleAll } from '../../../src/async/concurrency.js';
import { retryDelayMs } from '../../../src/bridge/handle-event.js';

describe('Semaphore', () => {
  it('admits up to its limit, then queues in arrival order', async () => {
    const semaphore = new Semaphore(2);
    await semaphore.acquire();
    await semaphore.acquire();
    const order: string[] = [];
    const first = semaphore.acquire().then(() => order.push('first'));
    const second = semaphore.acquire().then(() => order.push('second'));
    expect(semaphore.held).toBe(2);
    semaphore.release();
    await first;
    semaphore.release();
    await second;
    expect(order).toEqual(['first', 'second']);
  });

  it('acquireAvailable waits for one slot and takes every free one', async () => {
    const semaphore = new Semaphore(5);
    await semaphore.acquire();
    expect(await semaphore.acquireAvailable()).toBe(4);
    expect(semaphore.held).toBe(5);
    const waiting = semaphore.acquireAvailable();
    semaphore.release(2);
    expect(await waiting).toBe(2);
  });

  it('rejects a limit below one', () => {
    expect(() => new Semaphore(0)).toThrow(RangeError);
  });
});

describe('settleAll', () => {
  it('runs every task, at most `limit` at once, and returns the failures in item order', async () => {
    let active = 0;
    let peak = 0;
    const done: number[] = [];
    const failures = await settleAll([1, 2, 3, 4, 5, 6, 7], 3, async (n) => {
      peak = Math.max(peak, ++active);
      await Promise.resolve();
      active--;
      if (n % 3 === 0) throw new Error(`task ${n}`);
      done.push(n);
    });
    expect(peak).toBe(3);
    expect(done.sort()).toEqual([1, 2, 4, 5, 7]);
    expect(failures.map((e) => (e as Error).message)).toEqual(['task 3', 'task 6']);
  });

  it('with nothing to do, does nothing', async () => {
    expect(await settleAll([], 4, async () => undefined)).toEqual([]);
  });
});

describe('retryDelayMs', () => {
  const policy = { baseDelayMs: 1_000, maxDelayMs: 60_000 };

  it('doubles with each delivery from the base, up to the maximum', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8].map((n) => retryDelayMs(n, policy))).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000]);
    expect(retryDelayMs(10_000, policy)).toBe(60_000);
  });
});

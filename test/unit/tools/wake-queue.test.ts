/** The simulator's wake queue: in order, nothing lost while nobody waits, a deadline, and Ctrl-C. */
import { describe, expect, it } from 'vitest';
import { WakeQueue, WakeTimeoutError } from '../../../simulator/wake-queue.js';

describe('WakeQueue', () => {
  it('hands items out in arrival order, to waiters and later takers alike', async () => {
    const queue = new WakeQueue<number>();
    const waiting = queue.next(1_000);
    queue.push(1);
    queue.push(2);
    queue.push(3);
    expect(await waiting).toBe(1);
    expect(queue.size).toBe(2);
    expect(await queue.next(1_000)).toBe(2);
    expect(await queue.next(1_000)).toBe(3);
  });

  it('rejects after its deadline, and an item pushed later still reaches the next taker', async () => {
    const queue = new WakeQueue<string>();
    await expect(queue.next(10)).rejects.toBeInstanceOf(WakeTimeoutError);
    queue.push('late');
    expect(await queue.next(1_000)).toBe('late');
  });

  it('stops waiting when aborted, without swallowing the next item', async () => {
    const queue = new WakeQueue<string>();
    const stop = new AbortController();
    const waiting = queue.next(60_000, stop.signal);
    stop.abort(new Error('ctrl-c'));
    await expect(waiting).rejects.toThrow('ctrl-c');
    queue.push('kept');
    expect(queue.size).toBe(1);
  });
});

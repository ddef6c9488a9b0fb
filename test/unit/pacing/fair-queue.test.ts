/** The queue per key of src/pacing/fair-queue.ts: turns, order, arrivals, clearing. */
import { describe, expect, it } from 'vitest';
import { FairQueue } from '../../../src/pacing/fair-queue.js';

const takeAll = <T>(queue: FairQueue<T>) => {
  const out: string[] = [];
  for (let next = queue.take(); next !== undefined; next = queue.take()) out.push(`${next.key}:${String(next.item)}`);
  return out;
};

describe('FairQueue', () => {
  it('serves keys one item each in turn, each key in its own order', () => {
    const queue = new FairQueue<number>();
    queue.push('big', [1, 2, 3, 4]);
    queue.push('small', [1, 2]);
    expect(takeAll(queue)).toEqual(['big:1', 'small:1', 'big:2', 'small:2', 'big:3', 'big:4']);
    expect(queue.size).toBe(0);
    expect(queue.keys).toBe(0);
  });

  it('puts a key that arrives after the keys already waiting', () => {
    const queue = new FairQueue<number>();
    queue.push('a', [1, 2, 3]);
    queue.push('b', [1, 2, 3]);
    expect(queue.take()).toEqual({ key: 'a', item: 1 });
    queue.push('c', [1]);
    expect(takeAll(queue)).toEqual(['b:1', 'a:2', 'c:1', 'b:2', 'a:3', 'b:3']);
  });

  it('adds to a waiting key where it stands in the line', () => {
    const queue = new FairQueue<number>();
    queue.push('a', [1]);
    queue.push('b', [1]);
    queue.push('a', [2]);
    expect(takeAll(queue)).toEqual(['a:1', 'b:1', 'a:2']);
  });

  it('counts items and keys, ignores nothing pushed, and gives everything back when cleared', () => {
    const queue = new FairQueue<string>();
    queue.push('a', []);
    expect(queue.take()).toBeUndefined();
    queue.push('a', ['x', 'y']);
    queue.push('b', ['z']);
    expect([queue.size, queue.keys]).toEqual([3, 2]);
    expect(queue.clear().sort()).toEqual(['x', 'y', 'z']);
    expect([queue.size, queue.keys]).toEqual([0, 0]);
  });
});

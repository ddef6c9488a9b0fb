/** The queue per key of src/pacing/fair-queue.ts: turns, small keys first, order, arrivals, clearing. */
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

  describe('small keys first, large keys a share', () => {
    // small: at most 2 items queued; while both lines wait, every 3rd item is a large key's
    const options = { smallItems: 2, largeTurnEvery: 3 };
    const cases: { name: string; pushes: [string, number][]; taken: string[] }[] = [
      {
        name: 'a small key behind a large one goes first, the large one keeping every 3rd turn',
        pushes: [
          ['fanout', 5],
          ['dm-ish', 2],
        ],
        taken: ['dm-ish:1', 'dm-ish:2', 'fanout:1', 'fanout:2', 'fanout:3', 'fanout:4', 'fanout:5'],
      },
      {
        name: "many small keys: one item in every 3 is still the large key's",
        pushes: [
          ['fanout', 4],
          ['a', 2],
          ['b', 2],
          ['c', 1],
        ],
        taken: ['a:1', 'b:1', 'fanout:1', 'c:1', 'a:2', 'fanout:2', 'b:2', 'fanout:3', 'fanout:4'],
      },
      {
        name: 'large keys alone take turns, until one is down to a small remainder: that is served first',
        pushes: [
          ['x', 4],
          ['y', 4],
        ],
        // x:2 leaves x with 2 (small); y:2, later, leaves y with 2
        taken: ['x:1', 'y:1', 'x:2', 'x:3', 'x:4', 'y:2', 'y:3', 'y:4'],
      },
    ];
    it.each(cases)('$name', ({ pushes, taken }) => {
      const queue = new FairQueue<number>(options);
      for (const [key, n] of pushes)
        queue.push(
          key,
          Array.from({ length: n }, (_, i) => i + 1),
        );
      expect(takeAll(queue)).toEqual(taken);
    });

    it('a small key that grows past small moves to the back of the large line', () => {
      const queue = new FairQueue<number>(options);
      queue.push('a', [1]);
      queue.push('b', [1, 2, 3]);
      queue.push('a', [2, 3]); // 3 queued: large, behind b
      // b:1 leaves b with 2: small, served before a, which is large until a:1
      expect(takeAll(queue)).toEqual(['b:1', 'b:2', 'b:3', 'a:1', 'a:2', 'a:3']);
    });

    it('never starves a large key, however many small keys keep arriving', () => {
      const queue = new FairQueue<number>(options);
      queue.push(
        'fanout',
        Array.from({ length: 1_000 }, (_, i) => i + 1),
      );
      const served: string[] = [];
      for (let i = 0; i < 300; i++) {
        queue.push(`small-${i}`, [1]);
        served.push(queue.take()!.key);
      }
      const fanout = served.filter((k) => k === 'fanout').length;
      expect(fanout).toBeGreaterThanOrEqual(Math.floor(300 / 3));
    });
  });
});

import { describe, expect, it } from 'vitest';
import { createKeyedBatcher } from '../../../src/bridge/keyed-batcher.js';

/** A runner whose batches the test completes by hand, recording what each batch held. */
function controlledRunner() {
  const batches: { key: string; items: readonly number[]; finish: (error?: Error) => void }[] = [];
  const run = (key: string, items: readonly number[]) =>
    new Promise<readonly string[]>((resolve, reject) => {
      batches.push({ key, items, finish: (error) => (error ? reject(error) : resolve(items.map((i) => `${key}:${i}`))) });
    });
  return { batches, run };
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

describe('createKeyedBatcher', () => {
  it('runs one batch per key at a time; the next takes everything that queued meanwhile', async () => {
    const { batches, run } = controlledRunner();
    const batcher = createKeyedBatcher(run, 10);
    const first = batcher.submit('a', 1);
    const queued = [batcher.submit('a', 2), batcher.submit('a', 3)];
    expect(batches.map((b) => b.items)).toEqual([[1]]);
    batches[0]!.finish();
    expect(await first).toBe('a:1');
    await flush();
    expect(batches.map((b) => b.items)).toEqual([[1], [2, 3]]);
    batches[1]!.finish();
    expect(await Promise.all(queued)).toEqual(['a:2', 'a:3']);
  });

  it('runs different keys in parallel', async () => {
    const { batches, run } = controlledRunner();
    const batcher = createKeyedBatcher(run, 10);
    const results = [batcher.submit('a', 1), batcher.submit('b', 1)];
    expect(batches.map((b) => b.key)).toEqual(['a', 'b']);
    for (const batch of batches) batch.finish();
    expect(await Promise.all(results)).toEqual(['a:1', 'b:1']);
  });

  it('takes at most maxBatch items per batch', async () => {
    const { batches, run } = controlledRunner();
    const batcher = createKeyedBatcher(run, 2);
    const results = [1, 2, 3, 4, 5, 6].map((i) => batcher.submit('a', i));
    for (let i = 0; i < 4; i++) {
      batches[i]!.finish();
      await flush();
    }
    expect(batches.map((b) => b.items)).toEqual([[1], [2, 3], [4, 5], [6]]);
    expect(await Promise.all(results)).toHaveLength(6);
  });

  it("a failed batch rejects its own items only, and the key's later items still run", async () => {
    const { batches, run } = controlledRunner();
    const batcher = createKeyedBatcher(run, 10);
    const failing = batcher.submit('a', 1);
    const later = batcher.submit('a', 2);
    batches[0]!.finish(new Error('database down'));
    await expect(failing).rejects.toThrow('database down');
    await flush();
    batches[1]!.finish();
    expect(await later).toBe('a:2');
  });
});

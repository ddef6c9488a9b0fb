/**
 * Groups work by key: items submitted under one key run in batches, one batch at a time per
 * key; a batch takes everything that queued up while the previous one ran (up to
 * `maxBatch`). Different keys run in parallel.
 *
 * The bridge keys events by channel: every event of a channel updates the same rows, so
 * concurrent transactions for one channel would only queue on row locks (holding pool
 * connections and leaving other channels waiting). One transaction per channel at a time,
 * taking all its waiting events, turns a burst into a few statements.
 */
export type BatchRunner<T, R> = (key: string, items: readonly T[]) => Promise<readonly R[]>;

interface Waiting<T, R> {
  readonly item: T;
  resolve(result: R): void;
  reject(error: unknown): void;
}

export interface KeyedBatcher<T, R> {
  /** Resolves with this item's result, or rejects with its batch's error. */
  submit(key: string, item: T): Promise<R>;
}

/** `run` must return one result per item, in item order. */
export function createKeyedBatcher<T, R>(run: BatchRunner<T, R>, maxBatch: number): KeyedBatcher<T, R> {
  const queues = new Map<string, Waiting<T, R>[]>();

  const drain = async (key: string, queue: Waiting<T, R>[]) => {
    while (queue.length > 0) {
      const batch = queue.splice(0, maxBatch);
      try {
        const results = await run(
          key,
          batch.map((w) => w.item),
        );
        batch.forEach((w, i) => w.resolve(results[i]!));
      } catch (error) {
        for (const w of batch) w.reject(error);
      }
    }
    queues.delete(key);
  };

  return {
    submit(key, item) {
      return new Promise<R>((resolve, reject) => {
        const running = queues.get(key);
        if (running !== undefined) {
          running.push({ item, resolve, reject });
          return;
        }
        const queue = [{ item, resolve, reject }];
        queues.set(key, queue);
        void drain(key, queue);
      });
    },
  };
}

/** Small concurrency tools: a counting semaphore and a bounded parallel map (the one way this service runs work at most N at a time). */

/** At most `limit` holders at once; `acquire` waits (in arrival order) for a free slot. */
export class Semaphore {
  #free: number;
  readonly #waiting: (() => void)[] = [];

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`semaphore limit must be a positive integer (got ${limit})`);
    this.#free = limit;
  }

  get held(): number {
    return this.limit - this.#free;
  }

  async acquire(): Promise<void> {
    if (this.#free > 0) {
      this.#free--;
      return;
    }
    await new Promise<void>((resolve) => this.#waiting.push(resolve));
  }

  /** Waits for one free slot, then takes every free slot; resolves to how many were taken. */
  async acquireAvailable(): Promise<number> {
    await this.acquire();
    const more = this.#free;
    this.#free = 0;
    return 1 + more;
  }

  release(count = 1): void {
    for (let i = 0; i < count; i++) {
      const next = this.#waiting.shift();
      if (next !== undefined)
        next(); // the slot passes straight to the next waiter
      else this.#free++;
    }
  }
}

/**
 * Runs `task` on every item, at most `limit` at a time, and waits for all of them. Every
 * item is attempted even when some fail; the failures come back, in item order.
 */
export async function settleAll<T>(items: readonly T[], limit: number, task: (item: T) => Promise<void>): Promise<unknown[]> {
  const failures: { index: number; error: unknown }[] = [];
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      try {
        await task(items[index]!);
      } catch (error) {
        failures.push({ index, error });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return failures.sort((a, b) => a.index - b.index).map((f) => f.error);
}

/** Wakes as they arrive, for a consumer that takes them one at a time with a deadline. */
export class WakeQueue<T> {
  private readonly items: T[] = [];
  private readonly waiters: Array<(item: T) => void> = [];

  push(item: T): void {
    const waiter = this.waiters.shift();
    if (waiter === undefined) this.items.push(item);
    else waiter(item);
  }

  /** The next item; rejects after `timeoutMs` or when `signal` aborts. */
  next(timeoutMs: number, signal?: AbortSignal): Promise<T> {
    const ready = this.items.shift();
    if (ready !== undefined) return Promise.resolve(ready);
    return new Promise((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', aborted);
        const index = this.waiters.indexOf(take);
        if (index >= 0) this.waiters.splice(index, 1);
      };
      const take = (item: T) => {
        done();
        resolve(item);
      };
      const aborted = () => {
        done();
        reject(signal?.reason ?? new Error('aborted'));
      };
      const timer = setTimeout(() => {
        done();
        reject(new WakeTimeoutError(timeoutMs));
      }, timeoutMs);
      signal?.addEventListener('abort', aborted, { once: true });
      this.waiters.push(take);
    });
  }

  /** Items waiting to be taken. */
  get size(): number {
    return this.items.length;
  }
}

export class WakeTimeoutError extends Error {
  constructor(readonly timeoutMs: number) {
    super(`no wake within ${timeoutMs} ms`);
    this.name = 'WakeTimeoutError';
  }
}

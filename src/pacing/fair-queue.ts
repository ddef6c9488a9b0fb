/**
 * A queue per key, served one item each in turn: a key with a few items is served within its
 * first turns however many items another key holds. The bridge's signaller keys signals by chat
 * server (a channel's message) or by user (a registration), so a 20-member server's message, or
 * a phone that just registered, does not wait for a 10,000-member fan-out to finish.
 *
 * Pure: no I/O, no clock. What must stay true:
 *
 * - items of one key come out in the order they went in;
 * - a key that arrives takes its turn after the keys already waiting;
 * - a key that was served goes to the back of the line, and leaves it when it is empty.
 */
export class FairQueue<T> {
  /** Queues by key, in the order they take turns (a `Map` iterates in insertion order). */
  readonly #queues = new Map<string, T[]>();
  #size = 0;

  get size(): number {
    return this.#size;
  }

  /** Keys with something queued. */
  get keys(): number {
    return this.#queues.size;
  }

  /** Appends `items` to `key`'s queue; a key not waiting yet joins the line last. */
  push(key: string, items: readonly T[]): void {
    if (items.length === 0) return;
    const queue = this.#queues.get(key);
    if (queue === undefined) this.#queues.set(key, [...items]);
    else queue.push(...items);
    this.#size += items.length;
  }

  /** The next item of the key whose turn it is, which then goes to the back of the line. */
  take(): { readonly key: string; readonly item: T } | undefined {
    const first = this.#queues.entries().next();
    if (first.done === true) return undefined;
    const [key, queue] = first.value;
    const item = queue.shift()!;
    this.#queues.delete(key);
    if (queue.length > 0) this.#queues.set(key, queue);
    this.#size--;
    return { key, item };
  }

  /** Empties the queue; returns everything that was in it, key by key. */
  clear(): T[] {
    const items = [...this.#queues.values()].flat();
    this.#queues.clear();
    this.#size = 0;
    return items;
  }
}

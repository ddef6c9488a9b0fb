/**
 * A queue per key, served one item at a time in turns, small keys first: a key with a few items
 * is done within its first turns however many items another key holds. The bridge's signaller
 * keys signals by chat server (a channel's message) or by user (a registration), so a 20-member
 * server's message, or a phone that just registered, does not wait for a 10,000-member fan-out.
 *
 * Two lines of keys, by how many items a key has queued now: **small** (at most `smallItems`)
 * and **large**. The small line is served first, one item per key in turn; while both lines
 * wait, every `largeTurnEvery`-th item comes from the large line, so a fan-out keeps a share of
 * the sends however many small keys keep arriving (it is never starved). Served one item each
 * in turn, a 20-member server behind a fan-out would have half of the sends and wait for 40 of
 * them; served first, it waits for about 20.
 *
 * Pure: no I/O, no clock. What must stay true:
 *
 * - items of one key come out in the order they went in;
 * - within a line, a key that arrives takes its turn after the keys already waiting, and a key
 *   that was served goes to the back of its line (the small one if what it has left is small);
 * - a key leaves its line when it is empty;
 * - while both lines hold keys, at least one item in every `largeTurnEvery` comes from the large line.
 */
/** A key with at most this many items queued is small by default: a message to a small server, a registration. */
export const smallKeyItems = 64;

export interface FairQueueOptions {
  /** A key with at most this many items queued is small (default `smallKeyItems`). */
  readonly smallItems?: number;
  /** While both lines wait, every this-many-th item is a large key's (default 4: a quarter of the sends). */
  readonly largeTurnEvery?: number;
}

export class FairQueue<T> {
  /** The lines: queues by key, in the order they take turns (a `Map` iterates in insertion order). */
  readonly #small = new Map<string, T[]>();
  readonly #large = new Map<string, T[]>();
  readonly #smallItems: number;
  readonly #largeTurnEvery: number;
  /** Items taken from the small line in a row while the large line waited. */
  #smallTurnsInRow = 0;
  #size = 0;

  constructor(options: FairQueueOptions = {}) {
    this.#smallItems = options.smallItems ?? smallKeyItems;
    this.#largeTurnEvery = Math.max(2, options.largeTurnEvery ?? 4);
  }

  get size(): number {
    return this.#size;
  }

  /** Keys with something queued. */
  get keys(): number {
    return this.#small.size + this.#large.size;
  }

  /** Appends `items` to `key`'s queue; a key not waiting yet joins the back of its line. */
  push(key: string, items: readonly T[]): void {
    if (items.length === 0) return;
    const queue = this.#small.get(key) ?? this.#large.get(key);
    if (queue === undefined) this.#lineFor(items.length).set(key, [...items]);
    else {
      for (const item of items) queue.push(item);
      // grown past small: to the back of the large line
      if (queue.length > this.#smallItems && this.#small.delete(key)) this.#large.set(key, queue);
    }
    this.#size += items.length;
  }

  /** The next item: of the first key of the line whose turn it is; that key then goes to the back of its line. */
  take(): { readonly key: string; readonly item: T } | undefined {
    const line = this.#nextLine();
    if (line === undefined) return undefined;
    const [key, queue] = line.entries().next().value!;
    const item = queue.shift()!;
    line.delete(key);
    if (queue.length > 0) this.#lineFor(queue.length).set(key, queue);
    this.#size--;
    return { key, item };
  }

  /** Empties the queue; returns everything that was in it, key by key. */
  clear(): T[] {
    const items = [...this.#small.values(), ...this.#large.values()].flat();
    this.#small.clear();
    this.#large.clear();
    this.#size = 0;
    this.#smallTurnsInRow = 0;
    return items;
  }

  #lineFor(items: number): Map<string, T[]> {
    return items <= this.#smallItems ? this.#small : this.#large;
  }

  #nextLine(): Map<string, T[]> | undefined {
    const largeWaits = this.#large.size > 0;
    if (this.#small.size === 0 || (largeWaits && this.#smallTurnsInRow >= this.#largeTurnEvery - 1)) {
      this.#smallTurnsInRow = 0;
      return largeWaits ? this.#large : undefined;
    }
    this.#smallTurnsInRow = largeWaits ? this.#smallTurnsInRow + 1 : 0;
    return this.#small;
  }
}

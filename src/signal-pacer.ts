/**
 * Paces the signals that can wait — the bridge's `pending` signals of server channels, the api's
 * `registered` signals — against the workers' backlog, so that a DM's signal, sent at once and
 * never through here, waits behind at most about `targetDelayMs` of that work in Temporal's task
 * queue instead of behind a whole fan-out or burst of registrations (docs/architecture.md,
 * "DMs first").
 *
 * What must stay true:
 *
 * - **Nothing is lost.** A queued signal is either sent or its `submit` resolves with its
 *   failure (`stop()`), and the caller has a way back: the bridge's event fails and is
 *   redelivered, re-signalling the rows it owns; a registration's workflow is started by the
 *   next message's signal or by maintenance. What the signal tells was committed in PostgreSQL
 *   before it was queued here; signals are only hints.
 * - **Queues take turns.** Each key (a chat server in the bridge, a user in the api) has its own
 *   queue, and the queues are served one signal each in turn, so a 20-member server's signals go
 *   out within its first turns however large a fan-out another server has queued.
 * - **The backlog stays near the target.** At most `window` signals are sent and not yet known
 *   to be done. Whether they are is sampled with markers: an accepted signal's workflow is
 *   described until it has no workflow task left — neither waiting in the task queue nor
 *   running in a worker, where its claim and send run. Queue and workers serve roughly in
 *   order, so every signal accepted before a marker counts as done then. A task a worker has
 *   taken still waits there for a slot and the CPU with the others it holds, so what is
 *   measured is the whole way a DM's task would wait, not only the queue's part. Two markers
 *   are followed at once, half a window apart, so the window refills while the workers still
 *   have the other half: the sampling costs them no idle gap.
 * - **One decision per window.** A marker's wait is the backlog's delay. The window moves by
 *   what that is off the target, counted in the signals the workers finish meanwhile at their
 *   recent rate (at most a third of it at once): down when above, up when below and the window
 *   was full. Only a marker that waited behind the window as it is now decides — sent after
 *   every signal of the window before was done — so one cause moves the window once. A stalled
 *   worker therefore stops the flow after one window, and a fast one opens it within a few
 *   samples. Each pacer (two bridge replicas, the api's replicas) paces its own signals against
 *   the same backlog, so all back off when it grows.
 */
import type { DeviceToSignal } from './domain.js';
import { withTimeout } from './with-timeout.js';

export interface PacerOptions {
  /** The backlog's delay the pacer lets channel signals build, ms. */
  readonly targetDelayMs: number;
  /** Channel signals in flight (sent, not yet accepted) at once. */
  readonly concurrency: number;
  readonly initialWindow?: number;
  /**
   * The least window. A saturated engine's least delay understates a task's own time at full
   * load, so a target met only below this would leave the workers short of work.
   */
  readonly minWindow?: number;
  readonly maxWindow?: number;
  /** How often the marker's workflow is described while it waits. */
  readonly probeEveryMs?: number;
  /** Idle this long, the window starts again from `initialWindow` (the workers may have changed meanwhile). */
  readonly idleResetMs?: number;
  /** A describe not answered within this long counts as not known; a signal, as failed. */
  readonly answerTimeoutMs?: { readonly pending: number; readonly send: number };
}

export interface PacerDeps {
  /** Sends one device's `pending` signal. */
  send(device: DeviceToSignal): Promise<void>;
  /** Whether the device's workflow still has a workflow task, waiting for a worker or running in one. */
  pending(device: DeviceToSignal): Promise<boolean>;
  /** Told each sample: what was measured and the window it left (for debug logs). */
  sampled?(sample: PacerSample): void;
  readonly now?: () => number;
}

export interface PacerSample {
  /** The marker's wait, signal accepted → no workflow task left, ms. */
  readonly delayMs: number;
  /** The part of it forgiven as an empty queue's delay, ms. */
  readonly baseMs: number;
  /** What the decision took for backlog: the recent samples' median less the base, ms. */
  readonly backlogMs: number;
  readonly window: number;
  readonly unconfirmed: number;
  readonly queued: number;
}

/** The pacers a process's gauges read at each scrape: one per bridge replica or api app (one in production, several in tests). */
export class WatchedPacers {
  readonly #pacers = new Set<{ view(): PacerView }>();

  /** Shows `pacer` in the gauges until the returned function is called. */
  watch(pacer: { view(): PacerView }): () => void {
    this.#pacers.add(pacer);
    return () => this.#pacers.delete(pacer);
  }

  views(): PacerView[] {
    return [...this.#pacers].map((p) => p.view());
  }

  sum(pick: (view: PacerView) => number): number {
    return this.views().reduce((sum, view) => sum + pick(view), 0);
  }
}

export class PacerStoppedError extends Error {
  constructor() {
    super('the bridge is stopping: signal not sent');
    this.name = 'PacerStoppedError';
  }
}

interface Job {
  readonly device: DeviceToSignal;
  done(error?: unknown): void;
}

interface Accepted {
  /** Position in acceptance order, from 1. */
  readonly seq: number;
  readonly device: DeviceToSignal;
  readonly at: number;
  /** The window when it was sent, and whether it filled it: what its wait can say about a window. */
  readonly window: number;
  readonly filled: boolean;
  /** Signals known to be done when it was sent: those ahead of it that cannot have slowed it. */
  readonly doneAhead: number;
}

export interface PacerView {
  readonly window: number;
  readonly queued: number;
  readonly unconfirmed: number;
  readonly lastDelayMs: number | undefined;
}

export class SignalPacer {
  readonly #deps: PacerDeps;
  readonly #target: number;
  readonly #concurrency: number;
  readonly #initial: number;
  readonly #min: number;
  readonly #max: number;
  readonly #probeEveryMs: number;
  readonly #idleResetMs: number;
  readonly #answerTimeoutMs: { readonly pending: number; readonly send: number };
  readonly #now: () => number;

  /** Queues by key, in the order they take turns. */
  readonly #queues = new Map<string, Job[]>();
  #queued = 0;
  #window: number;
  #sending = 0;
  #accepted = 0;
  #confirmed = 0;
  #newest: Accepted | undefined;
  /** Markers being followed, and the newest of them. */
  #following = 0;
  #lastFollowed = 0;
  /** Signals sent or being sent when the window last changed. */
  #issuedAtChange = 0;
  #stopped = false;
  #idleSince: number;
  #lastDelayMs: number | undefined;
  /** Recent markers' delays (at, ms): their minimum is the delay of an empty queue. */
  #samples: { at: number; delayMs: number }[] = [];
  /** Signals known done over the last seconds (at, count): the rate the workers finish them. */
  #progress: { at: number; confirmed: number }[] = [];

  constructor(deps: PacerDeps, options: PacerOptions) {
    this.#deps = deps;
    this.#target = options.targetDelayMs;
    this.#concurrency = options.concurrency;
    this.#initial = options.initialWindow ?? defaultWindow;
    this.#min = options.minWindow ?? defaultWindow;
    this.#max = options.maxWindow ?? 10_000;
    this.#probeEveryMs = options.probeEveryMs ?? 50;
    this.#idleResetMs = options.idleResetMs ?? 10_000;
    this.#answerTimeoutMs = options.answerTimeoutMs ?? { pending: 5_000, send: 30_000 };
    this.#now = deps.now ?? Date.now;
    this.#window = this.#initial;
    this.#idleSince = this.#now();
  }

  /** Queues `devices` under `key`; resolves with the failures, in device order, once every one was sent or failed. */
  submit(key: string, devices: readonly DeviceToSignal[]): Promise<unknown[]> {
    if (devices.length === 0) return Promise.resolve([]);
    if (this.#stopped) return Promise.resolve(devices.map(() => new PacerStoppedError()));
    if (this.#idle() && this.#now() - this.#idleSince > this.#idleResetMs) this.#window = this.#initial;
    return new Promise((resolve) => {
      const failures = new Array<unknown>(devices.length);
      let left = devices.length;
      const queue = this.#queues.get(key) ?? [];
      this.#queues.delete(key); // re-inserted last: a key that arrives takes its turn after those waiting
      this.#queues.set(key, queue);
      devices.forEach((device, i) => {
        queue.push({
          device,
          done: (error) => {
            if (error !== undefined) failures[i] = error;
            if (--left === 0) resolve(failures.filter((f) => f !== undefined));
          },
        });
      });
      this.#queued += devices.length;
      this.#pump();
    });
  }

  /** Fails every queued signal (each caller's way back, above, takes over); signals in flight finish. */
  stop(): void {
    this.#stopped = true;
    for (const queue of this.#queues.values()) for (const job of queue.splice(0)) job.done(new PacerStoppedError());
    this.#queues.clear();
    this.#queued = 0;
  }

  view(): PacerView {
    return { window: this.#window, queued: this.#queued, unconfirmed: this.#unconfirmed(), lastDelayMs: this.#lastDelayMs };
  }

  #unconfirmed(): number {
    return this.#sending + this.#accepted - this.#confirmed;
  }

  #idle(): boolean {
    return this.#queued === 0 && this.#unconfirmed() === 0;
  }

  #pump(): void {
    while (this.#queued > 0 && this.#sending < this.#concurrency) {
      if (this.#unconfirmed() >= this.#window) return;
      this.#send(this.#nextJob());
    }
  }

  /** One signal from the queue whose turn it is; that queue goes to the back of the line. */
  #nextJob(): Job {
    const [key, queue] = this.#queues.entries().next().value!;
    const job = queue.shift()!;
    this.#queues.delete(key);
    if (queue.length > 0) this.#queues.set(key, queue);
    this.#queued--;
    return job;
  }

  #send(job: Job): void {
    this.#sending++;
    const window = this.#window;
    const filled = this.#unconfirmed() >= window;
    const doneAhead = this.#confirmed;
    // An answer that never comes must not hold the queues: the signal counts as failed (the
    // caller's way back takes over; a signal that did land after all costs its workflow one more look).
    withTimeout(this.#deps.send(job.device), this.#answerTimeoutMs.send, 'signal not accepted').then(
      () => {
        this.#sending--;
        this.#newest = { seq: ++this.#accepted, device: job.device, at: this.#now(), window, filled, doneAhead };
        job.done();
        this.#probe();
        this.#pump();
      },
      (error: unknown) => {
        this.#sending--;
        job.done(error ?? new Error('signal failed'));
        this.#settleIfIdle();
        this.#pump();
      },
    );
  }

  /**
   * Samples the backlog with the newest accepted signal. Two markers at most are followed at
   * once, the second half a window behind the first: with one, the window would refill only
   * when its newest signal was done — when the workers had just run dry — and every sample
   * would cost them an idle gap.
   */
  #probe(): void {
    const newest = this.#newest;
    if (newest === undefined || newest.seq <= Math.max(this.#confirmed, this.#lastFollowed)) return;
    if (this.#following >= markersAtOnce) return;
    if (this.#following > 0 && newest.seq - this.#lastFollowed < Math.ceil(this.#window / markersAtOnce)) return;
    this.#following++;
    this.#lastFollowed = newest.seq;
    void this.#follow(newest).finally(() => {
      this.#following--;
      this.#settleIfIdle();
      this.#probe();
      this.#pump();
    });
  }

  async #follow(marker: Accepted): Promise<void> {
    // Each describe is a call the engine serves beside the fan-out: the first look waits half
    // the least of the recent delays, which no marker is likely to beat by much.
    const recent = this.#recentDelays();
    if (recent.length > 0) await sleep(Math.min(1_000, Math.min(...recent) / 2));
    for (;;) {
      const pending = await withTimeout(this.#deps.pending(marker.device), this.#answerTimeoutMs.pending).catch(() => undefined);
      if (pending !== true) {
        // Done (or not known: Temporal did not answer, or not in time — counted as done, so a
        // failing or hanging describe cannot stall the channels; the next marker measures again).
        this.#confirmed = Math.max(this.#confirmed, marker.seq);
        this.#recordProgress();
        if (pending === false) this.#adapt(marker);
        return;
      }
      if (this.#stopped) return;
      // A worker that finishes nothing for seconds (stopped, all gone) is asked less often.
      const pause = this.#now() - marker.at > 5_000 ? 10 * this.#probeEveryMs : this.#probeEveryMs;
      await sleep(pause);
    }
  }

  #adapt(marker: Accepted): void {
    const now = this.#now();
    const delayMs = now - marker.at;
    this.#lastDelayMs = delayMs;
    this.#samples = [...this.#samples.filter((s) => now - s.at < 30_000), { at: now, delayMs }];
    // The delay a task has with nothing ahead of it (a poll, a round trip, the worker's own
    // claim and send — slower on a loaded engine) is not backlog: the least of the last 30 s,
    // up to four targets of it, is forgiven. Not more: a backlog that never empties must not
    // pass for the engine's speed. One slow sample is noise: the last three's median decides a
    // shrink; a growth needs all three below the target.
    const base = Math.min(forgivenTargets * this.#target, ...this.#samples.map((s) => s.delayMs));
    const recent = this.#recentDelays();
    const backlog = median(recent) - base;
    // A marker decides only if it waited behind the window as it is now: sent under it, and
    // after every signal sent under the one before was done (those still in flight when the
    // window shrank are ahead of it, and shrinking again for them would answer one cause twice).
    // It grows the window only if it filled it: a window never full, or a first sample (its own
    // base), says nothing of a larger one.
    if (marker.window === this.#window && marker.doneAhead >= this.#issuedAtChange) {
      const window = this.#window;
      if (backlog > this.#target) {
        this.#window = Math.max(this.#min, window - this.#signalsIn(backlog - this.#target, window));
      } else if (marker.filled && this.#samples.length > 1) {
        const worst = Math.max(...recent) - base;
        if (worst <= this.#target) this.#window = Math.min(this.#max, window + Math.max(1, this.#signalsIn(this.#target - worst, window)));
      }
      if (this.#window !== window) this.#issuedAtChange = this.#accepted + this.#sending;
    }
    this.#deps.sampled?.({ delayMs, baseMs: base, backlogMs: backlog, window: this.#window, unconfirmed: this.#unconfirmed(), queued: this.#queued });
  }

  /**
   * How many signals the workers finish in `ms` at their recent rate: the window moves by what
   * the backlog is off the target, in signals — no more than a third of it at once (the rate
   * is itself measured through the window), and a third when the rate is not known yet.
   */
  #signalsIn(ms: number, window: number): number {
    const third = Math.ceil(window / 3);
    const first = this.#progress[0];
    const last = this.#progress.at(-1);
    if (first === undefined || last === undefined || last.at - first.at < 500) return third;
    return Math.min(third, Math.round((ms * (last.confirmed - first.confirmed)) / (last.at - first.at)));
  }

  /** The last three markers' delays, ms. */
  #recentDelays(): number[] {
    return this.#samples.slice(-3).map((s) => s.delayMs);
  }

  #recordProgress(): void {
    const now = this.#now();
    this.#progress = [...this.#progress.filter((p) => now - p.at < 5_000), { at: now, confirmed: this.#confirmed }];
  }

  #settleIfIdle(): void {
    if (this.#idle()) this.#idleSince = this.#now();
  }
}

/**
 * Where the window starts and how far it may shrink: signals ahead of a DM that keep the workers
 * fed. At 16, the real Temporal server on two cores ran its fan-out at 0.71–0.79 of its rate
 * not paced, each task taking 0.4 s at full load against the least delay of 0.14 s the target
 * is measured from (docs/architecture.md, "DMs first").
 */
const defaultWindow = 24;

/** Markers followed at once (`#probe`). */
const markersAtOnce = 2;

/** How many targets' worth of an empty queue's delay `#adapt` forgives at most. */
const forgivenTargets = 4;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The middle value; of two, the larger (the cautious one: the window shrinks on it sooner). */
function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

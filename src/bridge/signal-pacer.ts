/**
 * Paces the `pending` signals of server channels against the workers' backlog, so that a DM's
 * signal — sent at once, never through here — waits behind at most about `targetDelayMs` of
 * channel work in Temporal's task queue instead of behind a whole fan-out (docs/architecture.md,
 * "DMs first").
 *
 * What must stay true:
 *
 * - **Nothing is lost.** A queued signal is either sent or its `submit` rejects (`stop()`): the
 *   caller's event then fails and is redelivered, and the redelivery re-signals the rows it owns.
 *   The pending rows were committed before anything was queued here; signals are only hints.
 * - **Servers take turns.** Each server has its own queue and the queues are served one signal
 *   each in turn, so a 20-member server's signals go out within its first turns however large
 *   a fan-out another server has queued.
 * - **The backlog stays near the target.** At most `window` signals are sent and not yet known
 *   to be done. Whether they are is sampled, one marker at a time: the newest accepted signal's
 *   workflow is described until it has no workflow task left — neither waiting in the task
 *   queue nor running in a worker, where its claim and send run. Queue and workers serve
 *   roughly in order, so every signal accepted before the marker counts as done then. A task a
 *   worker has taken still waits there for a slot and the CPU with the others it holds, so
 *   what is measured is the whole way a DM's task would wait, not only the queue's part. The
 *   marker's wait is the backlog's delay: above the target the window shrinks in proportion,
 *   below it (and when the window was what held signals back) it grows by half. A stalled
 *   worker therefore stops the flow after one window, and a fast one opens it within a few
 *   samples. Two bridge replicas each pace their own signals against the same backlog, so both
 *   back off when it grows.
 */
import { withTimeout } from '../with-timeout.js';
import type { DeviceToSignal } from './signal-pending.js';

export interface PacerOptions {
  /** The backlog's delay the pacer lets channel signals build, ms. */
  readonly targetDelayMs: number;
  /** Channel signals in flight (sent, not yet accepted) at once. */
  readonly concurrency: number;
  readonly initialWindow?: number;
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
  readonly now?: () => number;
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

  /** Queues by server, in the order servers take turns. */
  readonly #queues = new Map<string, Job[]>();
  #queued = 0;
  #window: number;
  #sending = 0;
  #windowHeldBack = false;
  #accepted = 0;
  #confirmed = 0;
  #newest: Accepted | undefined;
  #probing = false;
  #stopped = false;
  #idleSince: number;
  #lastDelayMs: number | undefined;
  /** Recent markers' delays (at, ms): their minimum is the delay of an empty queue. */
  #samples: { at: number; delayMs: number }[] = [];

  constructor(deps: PacerDeps, options: PacerOptions) {
    this.#deps = deps;
    this.#target = options.targetDelayMs;
    this.#concurrency = options.concurrency;
    this.#initial = options.initialWindow ?? 32;
    this.#min = options.minWindow ?? options.concurrency;
    this.#max = options.maxWindow ?? 10_000;
    this.#probeEveryMs = options.probeEveryMs ?? 50;
    this.#idleResetMs = options.idleResetMs ?? 10_000;
    this.#answerTimeoutMs = options.answerTimeoutMs ?? { pending: 5_000, send: 30_000 };
    this.#now = deps.now ?? Date.now;
    this.#window = this.#initial;
    this.#idleSince = this.#now();
  }

  /** Queues `devices` under `serverId`; resolves with the failures, in device order, once every one was sent or failed. */
  submit(serverId: string, devices: readonly DeviceToSignal[]): Promise<unknown[]> {
    if (devices.length === 0) return Promise.resolve([]);
    if (this.#stopped) return Promise.resolve(devices.map(() => new PacerStoppedError()));
    if (this.#idle() && this.#now() - this.#idleSince > this.#idleResetMs) this.#window = this.#initial;
    return new Promise((resolve) => {
      const failures = new Array<unknown>(devices.length);
      let left = devices.length;
      const queue = this.#queues.get(serverId) ?? [];
      this.#queues.delete(serverId); // re-inserted last: a server that arrives takes its turn after those waiting
      this.#queues.set(serverId, queue);
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

  /** Fails every queued signal (their events are redelivered); signals in flight finish. */
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
      if (this.#unconfirmed() >= this.#window) {
        this.#windowHeldBack = true;
        return;
      }
      this.#send(this.#nextJob());
    }
  }

  /** One signal from the server whose turn it is; that server goes to the back of the line. */
  #nextJob(): Job {
    const [serverId, queue] = this.#queues.entries().next().value!;
    const job = queue.shift()!;
    this.#queues.delete(serverId);
    if (queue.length > 0) this.#queues.set(serverId, queue);
    this.#queued--;
    return job;
  }

  #send(job: Job): void {
    this.#sending++;
    // An answer that never comes must not hold the channels: the signal counts as failed (its
    // event is redelivered; a signal that did land after all costs its workflow one more look).
    withTimeout(this.#deps.send(job.device), this.#answerTimeoutMs.send, 'signal not accepted').then(
      () => {
        this.#sending--;
        this.#newest = { seq: ++this.#accepted, device: job.device, at: this.#now() };
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

  /** Samples the backlog with the newest accepted signal, unless a sample is under way. */
  #probe(): void {
    if (this.#probing || this.#newest === undefined || this.#newest.seq <= this.#confirmed) return;
    this.#probing = true;
    const marker = this.#newest;
    void this.#follow(marker).finally(() => {
      this.#probing = false;
      this.#settleIfIdle();
      this.#probe();
      this.#pump();
    });
  }

  async #follow(marker: Accepted): Promise<void> {
    for (;;) {
      const pending = await withTimeout(this.#deps.pending(marker.device), this.#answerTimeoutMs.pending).catch(() => undefined);
      if (pending !== true) {
        // Done (or not known: Temporal did not answer, or not in time — counted as done, so a
        // failing or hanging describe cannot stall the channels; the next marker measures again).
        this.#confirmed = Math.max(this.#confirmed, marker.seq);
        if (pending === false) this.#adapt(this.#now() - marker.at);
        return;
      }
      if (this.#stopped) return;
      // A worker that finishes nothing for seconds (stopped, all gone) is asked less often.
      const pause = this.#now() - marker.at > 5_000 ? 10 * this.#probeEveryMs : this.#probeEveryMs;
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }

  #adapt(delayMs: number): void {
    const now = this.#now();
    this.#lastDelayMs = delayMs;
    this.#samples = [...this.#samples.filter((s) => now - s.at < 30_000), { at: now, delayMs }];
    // The delay a task has with nothing ahead of it (a poll, a round trip, the worker's own
    // claim and send — slower on a loaded engine) is not backlog: the least of the last 30 s,
    // up to four targets of it, is forgiven. Not more: a backlog that never empties must not
    // pass for the engine's speed. One slow sample is noise: the last three's median decides.
    const base = Math.min(forgivenTargets * this.#target, ...this.#samples.map((s) => s.delayMs));
    const recent = this.#samples.slice(-3).map((s) => s.delayMs);
    const backlog = median(recent) - base;
    if (backlog > this.#target) {
      this.#window = Math.max(this.#min, Math.floor(this.#window * Math.max(0.7, this.#target / backlog)));
    } else if (this.#windowHeldBack) {
      // Fast while far below the target, gently near it: a sample reports a window already grown.
      this.#window = Math.min(this.#max, backlog < this.#target / 2 ? Math.ceil(this.#window * 1.5) : this.#window + 1);
    }
    this.#windowHeldBack = false;
  }

  #settleIfIdle(): void {
    if (this.#idle()) this.#idleSince = this.#now();
  }
}

/** How many targets' worth of an empty queue's delay `#adapt` forgives at most. */
const forgivenTargets = 4;

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}

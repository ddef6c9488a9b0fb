/**
 * The signal pacer: sends the signals that can wait — a server channel's `pending` signals, a
 * registration's `registered` — against the workers' backlog, so that a DM's signal, sent at once
 * and never through here, waits behind at most about `targetMs` of that work in Temporal's task
 * queue and in the workers, instead of behind a whole fan-out or burst of registrations
 * (docs/architecture.md, "DMs first"). One runs per deployment: the bridge's signaller
 * (src/bridge/signaller.ts).
 *
 * Three parts: the queues take turns (fair-queue.ts), the window's size follows a pure law
 * (window-law.ts), and this loop sends and samples. What the loop must keep true:
 *
 * - **Nothing is lost.** A submitted signal is either sent, or its `submit` resolves with its
 *   failure (a failed send, or `stop()`): the caller keeps the obligation (the signaller's
 *   outbox row) and tries again.
 * - **At most `window` signals are sent and not yet known to be done.** Whether they are is
 *   sampled with markers: an accepted signal's workflow is described until it has no workflow
 *   task left — neither waiting in the task queue nor running in a worker, where its claim and
 *   send run. Queue and workers serve roughly in order, so every signal accepted before a done
 *   marker counts as done then. Two markers are followed at once, half a window apart, so the
 *   window refills while the workers still have the other half.
 * - **A marker that never finishes cannot stop the window.** A workflow whose task is wedged —
 *   it failed and is retried (a second attempt or later), or it waits on another task queue —
 *   is no part of the backlog: it leaves the window, and is no sample. One still waiting on its
 *   first attempt after a bound (four times the largest recent delay, at least `markerBoundMs`)
 *   is given up: a sample that timed out (window-law.ts), not done. Either way its device is not
 *   chosen as a marker again for `suspectMs`, and another accepted signal takes its place.
 *   Should every signal in flight be such a device — or the workers take nothing at all — one
 *   more signal is let through, then another after twice the wait, and so on (at most one per
 *   `maxGraceMs`): once one of them is done everything before it is, and a stopped engine
 *   receives a handful, not a flood.
 * - **A describe that fails does not stall the signals.** It counts as done (the next marker
 *   measures again), so pacing is then off: the observer hears of it once per episode (and of
 *   its end), and every failure is counted.
 */
import type { DeviceToSignal } from '../../domain/vocabulary.js';
import { withTimeout } from '../async/with-timeout.js';
import { FairQueue } from './fair-queue.js';
import { afterIdle, initialWindowState, nextWindow, type Decision, type WindowSettings, type WindowState } from './window-law.js';

/** What a signalled workflow's describe says of its workflow task. */
export type WorkflowTaskSeen =
  /** none left: everything it was signalled for is done */
  | 'none'
  /** one waiting in our task queue or running in a worker, on its first attempt: part of the backlog */
  | 'waiting'
  /**
   * one that is no part of the backlog: on its second attempt or later (it failed, and may fail
   * for ever: a nondeterminism, a type no worker knows) or on another task queue than ours
   */
  | 'wedged';

export interface PacerOptions {
  /** The backlog's delay to keep ahead of a DM, ms. */
  readonly targetMs: number;
  /** Signals being sent at once. */
  readonly concurrency: number;
  readonly initialWindow?: number;
  readonly minWindow?: number;
  readonly maxWindow?: number;
  /** How often a marker's workflow is described while it waits, ms. */
  readonly probeEveryMs?: number;
  /** Idle this long, the window starts again (window-law.ts). */
  readonly idleResetMs?: number;
  /** The least time a marker is followed before it is given up, ms. */
  readonly markerBoundMs?: number;
  /** How long a device whose marker was given up is not chosen as a marker again, ms. */
  readonly suspectMs?: number;
  /** The longest wait between two signals let through past a window of given-up markers, ms. */
  readonly maxGraceMs?: number;
  /** A describe not answered within `describe` counts as failed; a signal not accepted within `send`, as failed. */
  readonly answerTimeoutMs?: { readonly describe: number; readonly send: number };
}

/** What the pacer tells about itself: for logs and metrics. All optional. */
export interface PacerObserver {
  /** Each sample and what the law did with it. */
  sampled?(report: SampleReport): void;
  /** A describe failed or did not answer in time; `firstOfEpisode` after one that answered (or at start). */
  describeFailed?(error: unknown, firstOfEpisode: boolean): void;
  /** A describe answered again after `failed` failures in a row. */
  describesRecovered?(failed: number): void;
  /** A marker was given up: its task is wedged, or it was still waiting at its bound. */
  markerGivenUp?(reason: MarkerGivenUp): void;
}

export type MarkerGivenUp = 'wedged' | 'timed out';

/** `D`: a device and whatever its sender needs to know (which signal, for the signaller). */
export interface PacerDeps<D extends DeviceToSignal = DeviceToSignal> {
  send(device: D): Promise<void>;
  workflowTask(device: D): Promise<WorkflowTaskSeen>;
  readonly observer?: PacerObserver;
  readonly now?: () => number;
}

export interface SampleReport extends Omit<Decision, 'state'> {
  readonly delayMs: number;
  readonly timedOut: boolean;
  /** The marker's place in the window it was sent under (window-law.ts, `Observation.position`). */
  readonly position: number;
  readonly window: number;
  readonly unconfirmed: number;
  readonly queued: number;
}

export interface PacerView {
  /** Signals let be sent and not yet known done (0 when not paced). */
  readonly window: number;
  readonly queued: number;
  readonly unconfirmed: number;
  readonly lastDelayMs: number | undefined;
  /** Describes are failing: the pacer cannot see the backlog, and does not hold signals back. */
  readonly blind: boolean;
}

export interface SignalFailure<D extends DeviceToSignal = DeviceToSignal> {
  readonly device: D;
  readonly error: unknown;
}

/** What the signaller sends through: a `SignalPacer`, or a `FairSender` when pacing is off. */
export interface SignalSender<D extends DeviceToSignal> {
  /** Queues `devices` under `key`; resolves, once every one was sent or failed, with those that failed. */
  submit(key: string, devices: readonly D[]): Promise<SignalFailure<D>[]>;
  /** Fails every queued signal (the caller keeps what it owes); signals in flight finish. */
  stop(): void;
  view(): PacerView;
}

export class PacerStoppedError extends Error {
  constructor() {
    super('the pacer stopped: signal not sent');
    this.name = 'PacerStoppedError';
  }
}

interface Job<D> {
  readonly device: D;
  done(error?: unknown): void;
}

interface Accepted<D> {
  /** Position in acceptance order, from 1. */
  readonly seq: number;
  readonly device: D;
  readonly at: number;
  /** The window when it was sent, its place in it (signals not known done, itself included), and the signals known done then. */
  readonly window: number;
  readonly position: number;
  readonly doneAhead: number;
  /** How often the window had held signals back when it was sent (`#heldBack`). */
  readonly heldBackBefore: number;
}

const defaults = {
  initialWindow: 24,
  minWindow: 24,
  maxWindow: 10_000,
  probeEveryMs: 50,
  idleResetMs: 10_000,
  markerBoundMs: 5_000,
  suspectMs: 10 * 60_000,
  maxGraceMs: 5 * 60_000,
  answerTimeoutMs: { describe: 5_000, send: 30_000 },
};

/** Markers followed at once. */
const markersAtOnce = 2;
/** A marker's bound is at least this many times the largest recent delay. */
const boundOverDelays = 4;
/** A marker waiting longer than this is described ten times less often (a stopped worker). */
const slowProbeAfterMs = 5_000;

export class SignalPacer<D extends DeviceToSignal = DeviceToSignal> implements SignalSender<D> {
  readonly #deps: PacerDeps<D>;
  readonly #law: WindowSettings;
  readonly #options: Required<Omit<PacerOptions, 'targetMs' | 'initialWindow' | 'minWindow' | 'maxWindow' | 'idleResetMs'>>;
  readonly #now: () => number;

  readonly #queue = new FairQueue<Job<D>>();
  #state: WindowState;
  #sending = 0;
  /** Signals accepted, and the newest known done (everything accepted before it is done too). */
  #accepted = 0;
  #confirmed = 0;
  /** Accepted, not known done, and part of the backlog (not wedged), oldest first. */
  #inFlight: Accepted<D>[] = [];
  /** Markers being followed (their seqs) and the newest ever followed. */
  readonly #followed = new Set<number>();
  #lastFollowed = 0;
  /** Devices whose marker was given up, until when they are not chosen again. */
  readonly #suspects = new Map<string, number>();
  /** Signals let through past a window of given-up markers, and when the next may be. */
  #grace = 0;
  #nextGraceAt = 0;
  #graceWaitMs = 0;
  #graceTimer: NodeJS.Timeout | undefined;
  /** Times the window held a queued signal back: a marker sent before one and done after it waited behind a full window. */
  #heldBack = 0;
  #stopped = false;
  #idleSince: number;
  #lastDelayMs: number | undefined;
  /** Describes failed in a row. */
  #describeFailures = 0;
  /** Signals known done over the last seconds (at, count): the rate the workers finish them. */
  #progress: { at: number; confirmed: number }[] = [];

  constructor(deps: PacerDeps<D>, options: PacerOptions) {
    this.#deps = deps;
    this.#law = {
      targetMs: options.targetMs,
      initialWindow: options.initialWindow ?? defaults.initialWindow,
      minWindow: options.minWindow ?? defaults.minWindow,
      maxWindow: options.maxWindow ?? defaults.maxWindow,
      idleResetMs: options.idleResetMs ?? defaults.idleResetMs,
    };
    this.#options = {
      concurrency: options.concurrency,
      probeEveryMs: options.probeEveryMs ?? defaults.probeEveryMs,
      markerBoundMs: options.markerBoundMs ?? defaults.markerBoundMs,
      suspectMs: options.suspectMs ?? defaults.suspectMs,
      maxGraceMs: options.maxGraceMs ?? defaults.maxGraceMs,
      answerTimeoutMs: options.answerTimeoutMs ?? defaults.answerTimeoutMs,
    };
    this.#now = deps.now ?? Date.now;
    this.#state = initialWindowState(this.#law);
    this.#idleSince = this.#now();
  }

  /** Queues `devices` under `key`; resolves, once every one was sent or failed, with those that failed. */
  submit(key: string, devices: readonly D[]): Promise<SignalFailure<D>[]> {
    if (devices.length === 0) return Promise.resolve([]);
    if (this.#stopped) return Promise.resolve(devices.map((device) => ({ device, error: new PacerStoppedError() })));
    if (this.#idle()) this.#state = afterIdle(this.#state, this.#now() - this.#idleSince, this.#law);
    return new Promise((resolve) => {
      const failures: SignalFailure<D>[] = [];
      let left = devices.length;
      const jobs = devices.map((device): Job<D> => ({
        device,
        done: (error) => {
          if (error !== undefined) failures.push({ device, error });
          if (--left === 0) resolve(failures);
        },
      }));
      this.#queue.push(key, jobs);
      this.#pump();
    });
  }

  /** Fails every queued signal (the caller keeps what it owes); signals in flight finish. */
  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#graceTimer);
    for (const job of this.#queue.clear()) job.done(new PacerStoppedError());
  }

  view(): PacerView {
    return {
      window: this.#state.window,
      queued: this.#queue.size,
      unconfirmed: this.#unconfirmed(),
      lastDelayMs: this.#lastDelayMs,
      blind: this.#describeFailures > 0,
    };
  }

  #unconfirmed(): number {
    return this.#sending + this.#inFlight.length;
  }

  #idle(): boolean {
    return this.#queue.size === 0 && this.#unconfirmed() === 0;
  }

  #pump(): void {
    if (this.#stopped) return;
    while (this.#queue.size > 0 && this.#sending < this.#options.concurrency) {
      if (this.#unconfirmed() >= this.#state.window + this.#grace && !this.#letOneThrough()) {
        this.#heldBack++;
        return;
      }
      this.#send(this.#queue.take()!.item);
    }
  }

  /**
   * Whether one more signal may pass a full window because every signal in it is a device whose
   * marker was given up (or being sent): nothing in it can be sampled, so nothing in it would
   * ever free the window. Spaced out, doubling, while none of those let through is done.
   */
  #letOneThrough(): boolean {
    if (this.#followed.size > 0 || this.#sending > 0 || this.#newestCandidate() !== undefined) return false;
    const now = this.#now();
    if (now < this.#nextGraceAt) {
      clearTimeout(this.#graceTimer);
      this.#graceTimer = setTimeout(() => this.#pump(), this.#nextGraceAt - now);
      return false;
    }
    this.#grace++;
    this.#graceWaitMs = Math.min(this.#options.maxGraceMs, Math.max(this.#options.markerBoundMs, 2 * this.#graceWaitMs));
    this.#nextGraceAt = now + this.#graceWaitMs;
    return true;
  }

  #send(job: Job<D>): void {
    this.#sending++;
    const window = this.#state.window;
    const position = this.#unconfirmed();
    const doneAhead = this.#confirmed;
    const heldBackBefore = this.#heldBack;
    // An answer that never comes must not hold the queues: the signal counts as failed (the
    // caller tries again; a signal that did land after all costs its workflow one more look).
    withTimeout(this.#deps.send(job.device), this.#options.answerTimeoutMs.send, 'signal not accepted').then(
      () => {
        this.#sending--;
        this.#inFlight.push({ seq: ++this.#accepted, device: job.device, at: this.#now(), window, position, doneAhead, heldBackBefore });
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

  /** The newest accepted signal not known done that may be a marker: not followed already, not a suspect device. */
  #newestCandidate(): Accepted<D> | undefined {
    const now = this.#now();
    for (let i = this.#inFlight.length - 1; i >= 0; i--) {
      const a = this.#inFlight[i]!;
      if (!this.#followed.has(a.seq) && (this.#suspects.get(deviceKey(a.device)) ?? 0) <= now) return a;
    }
    return undefined;
  }

  /**
   * Starts following a marker when one may be: the newest candidate, or — while another is
   * followed — one at least half a window newer than the last marker, so the two take turns.
   */
  #probe(): void {
    if (this.#stopped || this.#followed.size >= markersAtOnce) return;
    const newest = this.#newestCandidate();
    if (newest === undefined) return;
    if (this.#followed.size > 0 && newest.seq - this.#lastFollowed < Math.ceil(this.#state.window / markersAtOnce)) return;
    this.#followed.add(newest.seq);
    this.#lastFollowed = Math.max(this.#lastFollowed, newest.seq);
    void this.#follow(newest).finally(() => {
      this.#followed.delete(newest.seq);
      this.#settleIfIdle();
      this.#probe();
      this.#pump();
    });
  }

  async #follow(marker: Accepted<D>): Promise<void> {
    // Each describe is a call the engine serves beside the work: the first look waits half the
    // least of the recent delays, which no marker is likely to beat by much.
    const least = this.#recentDelays();
    if (least.length > 0) await sleep(Math.min(1_000, Math.min(...least) / 2));
    for (;;) {
      if (this.#stopped || marker.seq <= this.#confirmed) return;
      const seen = await this.#describe(marker.device);
      if (seen === undefined || seen === 'none') {
        // Done — or not known (a describe that failed counts as done, so it cannot stall the signals).
        this.#confirm(marker.seq);
        if (seen === 'none') this.#sample(marker, this.#now() - marker.at, false);
        return;
      }
      if (seen === 'wedged') {
        this.#inFlight = this.#inFlight.filter((a) => a.seq !== marker.seq); // not part of the backlog
        this.#giveUp(marker, 'wedged');
        return;
      }
      const waited = this.#now() - marker.at;
      if (waited >= this.#boundMs()) {
        this.#giveUp(marker, 'timed out');
        this.#sample(marker, waited, true);
        return;
      }
      await sleep(waited > slowProbeAfterMs ? 10 * this.#options.probeEveryMs : this.#options.probeEveryMs);
    }
  }

  /** What the device's workflow task is, or undefined when the describe failed or did not answer in time. */
  async #describe(device: D): Promise<WorkflowTaskSeen | undefined> {
    try {
      const seen = await withTimeout(this.#deps.workflowTask(device), this.#options.answerTimeoutMs.describe, 'describe not answered');
      if (this.#describeFailures > 0) this.#deps.observer?.describesRecovered?.(this.#describeFailures);
      this.#describeFailures = 0;
      return seen;
    } catch (error) {
      this.#deps.observer?.describeFailed?.(error, this.#describeFailures++ === 0);
      return undefined;
    }
  }

  /** How long a marker is followed: four times the largest recent delay that was measured, at least `markerBoundMs`. */
  #boundMs(): number {
    const measured = this.#state.samples.filter((s) => !s.timedOut).map((s) => s.delayMs);
    return Math.max(this.#options.markerBoundMs, boundOverDelays * Math.max(0, ...measured.slice(-3)));
  }

  #giveUp(marker: Accepted<D>, reason: MarkerGivenUp): void {
    const now = this.#now();
    for (const [key, until] of this.#suspects) if (until <= now) this.#suspects.delete(key);
    this.#suspects.set(deviceKey(marker.device), now + this.#options.suspectMs);
    this.#deps.observer?.markerGivenUp?.(reason);
  }

  #confirm(seq: number): void {
    if (seq <= this.#confirmed) return;
    this.#confirmed = seq;
    this.#inFlight = this.#inFlight.filter((a) => a.seq > seq);
    this.#grace = 0;
    this.#graceWaitMs = 0;
    this.#nextGraceAt = 0;
    const now = this.#now();
    this.#progress = [...this.#progress.filter((p) => now - p.at < 5_000), { at: now, confirmed: this.#confirmed }];
  }

  #sample(marker: Accepted<D>, delayMs: number, timedOut: boolean): void {
    const at = this.#now();
    if (!timedOut) this.#lastDelayMs = delayMs;
    const decision = nextWindow(
      this.#state,
      {
        at,
        delayMs,
        timedOut,
        sentUnder: marker.window,
        // The window was full at its send or while it waited (the first signals of a fan-out
        // fill it a moment after they leave): what its delay measured is a full window's.
        filled: marker.position >= marker.window || this.#heldBack > marker.heldBackBefore,
        position: marker.position,
        doneAhead: marker.doneAhead,
        issued: this.#accepted + this.#sending,
        ratePerMs: this.#ratePerMs(),
      },
      this.#law,
    );
    this.#state = decision.state;
    this.#deps.observer?.sampled?.({
      delayMs,
      timedOut,
      position: marker.position,
      move: decision.move,
      baseMs: decision.baseMs,
      backlogMs: decision.backlogMs,
      window: this.#state.window,
      unconfirmed: this.#unconfirmed(),
      queued: this.#queue.size,
    });
  }

  /** Signals the workers finished per ms over the last seconds; undefined over less than half a second. */
  #ratePerMs(): number | undefined {
    const first = this.#progress[0];
    const last = this.#progress.at(-1);
    if (first === undefined || last === undefined || last.at - first.at < 500) return undefined;
    return (last.confirmed - first.confirmed) / (last.at - first.at);
  }

  /** The last three measured delays, ms. */
  #recentDelays(): number[] {
    return this.#state.samples
      .filter((s) => !s.timedOut)
      .slice(-3)
      .map((s) => s.delayMs);
  }

  #settleIfIdle(): void {
    if (this.#idle()) this.#idleSince = this.#now();
  }
}

const deviceKey = (device: DeviceToSignal) => `${device.userId}\u0000${device.deviceId}`;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The window's control law, pure: from the window's state and one marker's sample, the next
 * state. The pacer (pacer.ts) keeps at most `window` signals sent and not yet known to be done;
 * this law moves the window so that the workers' backlog — the time a task waits in Temporal's
 * queue and in the workers, beyond what a task with nothing ahead of it takes — stays near
 * `targetMs`. A DM's task, never paced, waits behind about that much work.
 *
 * What must stay true (each has a row in test/unit/pacing/window-law.test.ts):
 *
 * - **A task's own time is not backlog.** The least delay of the last 30 s (a poll, a round
 *   trip, the claim and send — slower on a loaded engine) is forgiven, up to
 *   `forgivenTargets` targets of it: a backlog that never empties must not pass for the
 *   engine's speed. A sample that timed out is a lower bound, never a base.
 * - **One slow sample is noise.** The median of the last three samples decides a shrink; a
 *   growth needs all three at or below the target, none of them timed out.
 * - **One cause moves the window once.** A sample decides only if its marker waited behind the
 *   window as it is now: sent under it, after every signal issued before its last change was
 *   done. A first sample, which is its own base, never grows it.
 * - **A marker speaks for what was ahead of it.** Only one that filled the window and had at
 *   least half of it ahead grows it: the queue serves in order, and the first markers of a
 *   window just grown, sent into an engine that had emptied, measure nothing of the rest.
 * - **Steps in signals.** The window moves by what the backlog is off the target, counted in
 *   the signals the workers finish in that time at their recent rate — no more than a third of
 *   the window at once (the rate is itself measured through the window).
 * - **Bounds.** Never below `minWindow` (a saturated engine's least delay understates a task's
 *   time at full load: below it, a met target would leave the workers short of work), never
 *   above `maxWindow`.
 * - **An idle engine is not slowed by the start.** After a start or an idle spell longer than
 *   `idleResetMs` the window starts again at `initialWindow` in slow start: it doubles at each
 *   decision while the backlog stays at or below the target, and leaves slow start at the
 *   first sample above it (then the steps above apply). A fan-out on an idle engine reaches the
 *   window that keeps the workers busy within a few samples instead of a third at a time.
 * - **Markers that never finish do not hold the window open.** A sample that timed out counts
 *   as a delay of at least its bound: above the target it shrinks the window as any slow sample
 *   would, and it never grows it; samples that keep timing out take the window to its floor
 *   and keep it there.
 */

export interface WindowSettings {
  /** The backlog's delay to keep, ms. */
  readonly targetMs: number;
  readonly initialWindow: number;
  readonly minWindow: number;
  readonly maxWindow: number;
  /** Idle (nothing queued or in flight) longer than this, ms: the window starts again. */
  readonly idleResetMs: number;
}

export interface Sample {
  /** When it was known, ms. */
  readonly at: number;
  /** The marker's wait, signal accepted → no workflow task left, ms; its bound when it timed out. */
  readonly delayMs: number;
  /** The pacer gave up before the marker was done: the delay is at least `delayMs`. */
  readonly timedOut: boolean;
}

export interface WindowState {
  readonly window: number;
  readonly slowStart: boolean;
  /** The samples of the last `sampleMemoryMs`, oldest first. */
  readonly samples: readonly Sample[];
  /** Signals issued (sent or being sent) when the window last changed. */
  readonly issuedAtChange: number;
}

/** One marker's sample and what the pacer knew of the window when the marker was sent and now. */
export interface Observation extends Sample {
  /** The window the marker was sent under. */
  readonly sentUnder: number;
  /** Whether the marker filled that window: a window never full says nothing of a larger one. */
  readonly filled: boolean;
  /**
   * The marker's place in that window when it was sent: the signals sent and not yet known done
   * then, itself included. The queue serves in order, so a marker waits behind those ahead of it
   * only: one near the front of its window measured little of it.
   */
  readonly position: number;
  /** Signals known done when the marker was sent. */
  readonly doneAhead: number;
  /** Signals issued (sent or being sent) now. */
  readonly issued: number;
  /** Signals the workers finished per ms lately; undefined when not known yet. */
  readonly ratePerMs: number | undefined;
}

export type Move = 'up' | 'down' | 'held' | 'not deciding';

export interface Decision {
  readonly state: WindowState;
  readonly move: Move;
  /** The part of the delay forgiven as a task's own time, ms. */
  readonly baseMs: number;
  /** What the decision took for backlog: the last samples' median less the base, ms. */
  readonly backlogMs: number;
}

/** How many targets' worth of a task's own time the law forgives at most. */
export const forgivenTargets = 4;
/** How long a sample is remembered (for the base), ms. */
export const sampleMemoryMs = 30_000;
/** Samples whose median (shrink) or worst (growth) decides. */
export const recentSamples = 3;

export function initialWindowState(settings: WindowSettings): WindowState {
  return { window: settings.initialWindow, slowStart: true, samples: [], issuedAtChange: 0 };
}

/** The state after `idleMs` with nothing queued or in flight: a long idle spell starts afresh (the workers may have changed meanwhile). */
export function afterIdle(state: WindowState, idleMs: number, settings: WindowSettings): WindowState {
  if (idleMs <= settings.idleResetMs) return state;
  return { ...initialWindowState(settings), issuedAtChange: state.issuedAtChange };
}

/** The next state after one sample. */
export function nextWindow(state: WindowState, observation: Observation, settings: WindowSettings): Decision {
  const sample: Sample = { at: observation.at, delayMs: observation.delayMs, timedOut: observation.timedOut };
  const samples = [...state.samples.filter((s) => observation.at - s.at < sampleMemoryMs), sample];
  const baseMs = Math.min(forgivenTargets * settings.targetMs, ...samples.filter((s) => !s.timedOut).map((s) => s.delayMs));
  const recent = samples.slice(-recentSamples);
  const backlogMs = median(recent.map((s) => s.delayMs)) - baseMs;
  const remembered = { ...state, samples };
  const deciding = observation.sentUnder === state.window && observation.doneAhead >= state.issuedAtChange;
  if (!deciding) return { state: remembered, move: 'not deciding', baseMs, backlogMs };

  const step = (ms: number) => signalsIn(ms, state.window, observation.ratePerMs);
  let window = state.window;
  let slowStart = state.slowStart;
  if (backlogMs > settings.targetMs) {
    window = Math.max(settings.minWindow, state.window - step(backlogMs - settings.targetMs));
    slowStart = false;
  } else if (speaksForTheWindow(observation) && samples.length > 1 && recent.every((s) => !s.timedOut)) {
    const worstMs = Math.max(...recent.map((s) => s.delayMs)) - baseMs;
    if (worstMs <= settings.targetMs) {
      const grown = slowStart ? 2 * state.window : state.window + Math.max(1, step(settings.targetMs - worstMs));
      window = Math.min(settings.maxWindow, grown);
    }
  }
  const move: Move = window > state.window ? 'up' : window < state.window ? 'down' : 'held';
  const issuedAtChange = window === state.window ? state.issuedAtChange : observation.issued;
  return { state: { window, slowStart, samples, issuedAtChange }, move, baseMs, backlogMs };
}

/**
 * Whether a sample may grow the window: its marker filled the window, and waited behind at least
 * half of it (markers are taken half a window apart, so in a busy window each has about that much
 * ahead). The first markers of a window just grown go out before the rest of it: on an engine
 * that had emptied they wait behind nothing, and taken for the grown window's backlog they would
 * double it again at once.
 */
export function speaksForTheWindow(observation: Observation): boolean {
  return observation.filled && 2 * observation.position >= observation.sentUnder;
}

/**
 * How many signals the workers finish in `ms` at their recent rate, at most a third of the
 * window (and a third when the rate is not known yet).
 */
export function signalsIn(ms: number, window: number, ratePerMs: number | undefined): number {
  const third = Math.ceil(window / 3);
  if (ratePerMs === undefined) return third;
  return Math.min(third, Math.round(ms * ratePerMs));
}

/** The middle value; of two, the larger (the cautious one: the window shrinks on it sooner). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/**
 * The window's control law (src/pacing/window-law.ts) as tables: one state, one sample, the
 * window that follows — at every boundary the law has.
 */
import { describe, expect, it } from 'vitest';
import {
  afterIdle,
  initialWindowState,
  nextWindow,
  sampleMemoryMs,
  signalsIn,
  type Observation,
  type Sample,
  type WindowSettings,
  type WindowState,
} from '../../../src/pacing/window-law.js';

const settings: WindowSettings = { targetMs: 250, initialWindow: 24, minWindow: 24, maxWindow: 100, idleResetMs: 10_000 };

const at = 100_000;
/** Samples a second apart, ending a second before `at`. */
const earlier = (...delays: (number | 'timed out 5000')[]): Sample[] =>
  delays.map((d, i) => ({
    at: at - (delays.length - i) * 1_000,
    delayMs: d === 'timed out 5000' ? 5_000 : d,
    timedOut: d === 'timed out 5000',
  }));

const state = (window: number, samples: Sample[], more: Partial<WindowState> = {}): WindowState => ({
  window,
  slowStart: false,
  samples,
  issuedAtChange: 0,
  ...more,
});

/** A marker that waited behind the window as it is, filled it, and decides. */
const observed = (s: WindowState, delayMs: number, more: Partial<Observation> = {}): Observation => ({
  at,
  delayMs,
  timedOut: false,
  sentUnder: s.window,
  filled: true,
  position: s.window,
  doneAhead: s.issuedAtChange,
  issued: 5_000,
  ratePerMs: undefined,
  ...more,
});

describe('nextWindow', () => {
  const rows: [string, WindowState, Partial<Observation> & { delayMs: number }, number, boolean?][] = [
    // name, state, sample, next window, next slow start
    ['a first sample is its own base: never grows', initialWindowState(settings), { delayMs: 80 }, 24, true],
    ['slow start: doubles while at or below the target', state(24, earlier(80), { slowStart: true }), { delayMs: 120 }, 48, true],
    ['slow start: stops at the ceiling', state(60, earlier(80, 90), { slowStart: true }), { delayMs: 100 }, 100, true],
    [
      'slow start: left at the first sample above the target (a third off, rate unknown)',
      state(48, earlier(100, 500), { slowStart: true }),
      { delayMs: 600 },
      32,
      false,
    ],
    ['above the target: down by the excess in signals at the recent rate', state(60, earlier(100, 700)), { delayMs: 800, ratePerMs: 0.05 }, 42],
    ['above the target: at most a third at once', state(60, earlier(100, 2_000)), { delayMs: 2_000, ratePerMs: 1 }, 40],
    ['the floor: never below the least window', state(30, earlier(100, 2_000)), { delayMs: 2_000 }, 24],
    ['at the floor, above the target: stays there', state(24, earlier(100, 2_000)), { delayMs: 2_000 }, 24],
    ['below the target: up by the room left in signals', state(40, earlier(100, 150)), { delayMs: 200, ratePerMs: 0.02 }, 43],
    ['below the target, rate unknown: up by a third', state(40, earlier(100, 150)), { delayMs: 200 }, 54],
    ['below the target, no room left to count: up by one', state(40, earlier(100, 340)), { delayMs: 350, ratePerMs: 0.001 }, 41],
    ['the ceiling: never above the largest window', state(99, earlier(100, 120)), { delayMs: 110 }, 100],
    ['a window never full says nothing of a larger one', state(40, earlier(100, 150)), { delayMs: 200, filled: false }, 40],
    [
      'a marker with less than half the window ahead of it measured little of it: no growth',
      state(40, earlier(100, 150)),
      { delayMs: 200, position: 19 },
      40,
    ],
    ['a marker with half the window ahead of it speaks for it: up', state(40, earlier(100, 150)), { delayMs: 200, position: 20 }, 54],
    [
      'slow start: the first marker of a window just grown, into an emptied engine, does not double it again',
      state(48, earlier(80, 90), { slowStart: true }),
      { delayMs: 85, position: 1 },
      48,
      true,
    ],
    ['a marker near the front still shrinks: what it waited behind is backlog', state(40, earlier(100, 900)), { delayMs: 900, position: 1 }, 26],
    ['one slow sample of three is noise: no shrink, and no growth', state(40, earlier(100, 120)), { delayMs: 900 }, 40],
    ['two slow samples of three: down', state(40, earlier(100, 900)), { delayMs: 900 }, 26],
    ['a sample that timed out, alone: no shrink (median), no growth', state(40, earlier(100, 120)), { delayMs: 5_000, timedOut: true }, 40],
    ['a sample that timed out with a slow one: down', state(40, earlier(100, 900)), { delayMs: 5_000, timedOut: true }, 26],
    [
      'samples that only time out are never a base: the most forgiven is four targets',
      state(40, earlier('timed out 5000')),
      { delayMs: 5_000, timedOut: true },
      26,
    ],
    ['a task slower than four targets is backlog beyond them', state(40, earlier(1_500, 1_500)), { delayMs: 1_500 }, 26],
    ['a task slower than the target but within four targets is forgiven', state(40, earlier(700, 720)), { delayMs: 710 }, 54],
    ['a marker sent under another window does not decide', state(40, earlier(100, 900)), { delayMs: 900, sentUnder: 54 }, 40],
    [
      'a marker sent before the last change was done does not decide',
      state(40, earlier(100, 900), { issuedAtChange: 300 }),
      { delayMs: 900, doneAhead: 299 },
      40,
    ],
  ];

  it.each(rows)('%s', (_name, before, sample, window, slowStart) => {
    const { state: after } = nextWindow(before, observed(before, sample.delayMs, sample), settings);
    expect(after.window).toBe(window);
    if (slowStart !== undefined) expect(after.slowStart).toBe(slowStart);
  });

  it('remembers every sample, deciding or not, and forgets those older than its memory', () => {
    const before = state(40, [{ at: at - sampleMemoryMs, delayMs: 20, timedOut: false }, ...earlier(100)]);
    const { state: after, baseMs } = nextWindow(before, observed(before, 300, { sentUnder: 1 }), settings);
    expect(after.samples.map((s) => s.delayMs)).toEqual([100, 300]);
    expect(baseMs).toBe(100);
  });

  it('marks a change with the signals issued then: the next decision waits for them to be done', () => {
    const before = state(40, earlier(100, 900));
    const { state: after, move } = nextWindow(before, observed(before, 900, { issued: 1_234 }), settings);
    expect(move).toBe('down');
    expect(after.issuedAtChange).toBe(1_234);
    const held = nextWindow(after, observed(after, 100, { issued: 1_300, doneAhead: 1_000 }), settings);
    expect(held.move).toBe('not deciding');
    expect(held.state.issuedAtChange).toBe(1_234);
  });

  it('markers that never finish take the window to its floor and keep it there', () => {
    let s = state(100, earlier(100, 100));
    for (let i = 0; i < 20; i++) s = nextWindow(s, observed(s, 5_000, { timedOut: true, at: at + i * 100 }), settings).state;
    expect(s.window).toBe(24);
  });
});

describe('afterIdle', () => {
  const busy = state(80, earlier(100, 200), { issuedAtChange: 42 });

  it.each([
    ['idle up to the reset: unchanged', 10_000, busy],
    ['idle longer: starts again, in slow start, with nothing remembered', 10_001, { window: 24, slowStart: true, samples: [], issuedAtChange: 42 }],
  ])('%s', (_name, idleMs, expected) => {
    expect(afterIdle(busy, idleMs, settings)).toEqual(expected);
  });
});

describe('signalsIn', () => {
  it.each([
    [500, 60, 0.05, 20],
    [100, 60, 0.05, 5],
    [100, 60, undefined, 20],
    [10_000, 10, 1, 4],
  ])('%i ms at a window of %i and %s signals/ms: %i', (ms, window, rate, expected) => {
    expect(signalsIn(ms, window, rate)).toBe(expected);
  });
});

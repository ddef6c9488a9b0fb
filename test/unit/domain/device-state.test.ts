/**
 * DeviceState as pure code: (what happened, now) → when the workflow looks at PostgreSQL next.
 * Each row is a short history of events from the workflow's point of view — signals, claims
 * and what they answered — on the design's intervals (15 s, 15 min); times in seconds. The
 * time-skipping tier (test/workflow) keeps what needs a real history: timers, continue-as-new,
 * patches, lost tasks.
 */
import { describe, expect, it } from 'vitest';
import { currentBehaviours, DeviceState, type NextCheck, type RunBehaviours } from '../../../domain/device-state.js';
import type { HeldBack } from '../../../domain/wake-policy.js';

const intervals = { minIntervalMs: 15_000, rewakeAfterMs: 900_000 };
const s = (seconds: number) => 1_800_000_000_000 + seconds * 1_000;
const current: RunBehaviours = currentBehaviours;
/** A run begun before any of the later behaviours. */
const none: RunBehaviours = {
  signalAsksAtInterval: false,
  escalates: false,
  registrationEndsBackoff: false,
  drainsLearnedFromClaims: false,
  rewakeAlarm: false,
};
/** A run begun with `delivery-control` alone. */
const deliveryControlOnly: RunBehaviours = { ...none, signalAsksAtInterval: true };
/** A run begun by a worker before `lean-plan` (escalation and the registration's end of a back-off, not yet drains learned from claims or the alarm). */
const middle: RunBehaviours = { ...none, signalAsksAtInterval: true, escalates: true, registrationEndsBackoff: true };

/** One thing that happens to the workflow at a moment (seconds). */
type Step =
  | ['pending' | 'drained' | 'deleted' | 'registered', number]
  /** A look that claimed a wake. */
  | ['claimed', number]
  /** A look that did not claim: what it saw, and when it said a wake could be claimed. */
  | ['refused', number, { outstanding: boolean; hasPending: boolean; lastWokenAt: number | null }, readyAt?: number, heldBack?: HeldBack]
  /** The send did not go through: backing off until then (`markerless`: replaying a history without `deferral-heeds-signals`). */
  | ['deferred', number, until: number, markerless?: 'markerless'];

function replay(steps: readonly Step[], patches: RunBehaviours = current): DeviceState {
  const state = new DeviceState('unifiedpush', undefined, patches);
  for (const step of steps) {
    const [event, at] = step;
    if (event === 'pending') state.onPending();
    else if (event === 'drained') state.onDrained();
    else if (event === 'deleted') state.onDeleted();
    else if (event === 'registered') state.onRegistered('unifiedpush');
    else if (event === 'deferred') state.onDeferred(s(step[2]), 'test back-off', state.signalledDuringLook && step[3] !== 'markerless');
    else {
      state.onClaimStarted();
      state.onClaimAnswered({ intervals, transport: 'unifiedpush' });
      if (event === 'claimed') state.onClaimed(s(at));
      else {
        const [, , seen, readyAt, heldBack] = step as Extract<Step, [string, number, object, ...unknown[]]>;
        state.onObserved(
          { ...seen, lastWokenAt: seen.lastWokenAt === null ? null : s(seen.lastWokenAt) },
          s(at),
          readyAt === undefined ? null : s(readyAt),
          heldBack,
        );
      }
    }
  }
  return state;
}

const nothing = { outstanding: false, hasPending: false, lastWokenAt: null };
/** A wake claimed at 0 s, sent, not drained. */
const wokenAt0: Step[] = [
  ['refused', 0, nothing],
  ['pending', 0],
  ['claimed', 0],
];

type Row = [
  what: string,
  steps: readonly Step[],
  nowSeconds: number,
  expected: { at: number; reason: NextCheck['reason'] } | undefined,
  patches?: RunBehaviours,
];

const table: Row[] = [
  ['a fresh run looks at once (it may have been started to heal a device)', [], 0, { at: 0, reason: 'now' }],
  ['idle after a look that found nothing: no timer at all', [['refused', 0, nothing]], 5, undefined],
  [
    'a message: look at once',
    [
      ['refused', 0, nothing],
      ['pending', 3],
    ],
    3,
    { at: 3, reason: 'now' },
  ],
  ['after a wake, rows pending: the re-wake', wokenAt0, 1, { at: 900, reason: 'rewake' }],
  [
    'after a drained wake: idle (a run begun before drains were learned from claims)',
    [...wokenAt0, ['drained', 5]],
    6,
    undefined,
    deliveryControlOnly,
  ],
  [
    'a drained signal is no longer taken at its word: the re-wake stays planned (its look will see the drain)',
    [...wokenAt0, ['drained', 5]],
    6,
    { at: 900, reason: 'rewake' },
  ],
  [
    "a late drained cannot cancel a newer wake's re-wake",
    [...wokenAt0, ['pending', 20], ['claimed', 20], ['drained', 21]],
    21,
    { at: 920, reason: 'rewake' },
  ],
  ['a message after the drain, inside the interval: at its end', [...wokenAt0, ['drained', 5], ['pending', 8]], 8, { at: 15, reason: 'interval' }],
  ['a message after the drain and the interval: at once', [...wokenAt0, ['drained', 5], ['pending', 20]], 20, { at: 20, reason: 'now' }],
  [
    'a message while the wake is believed outstanding: one look when the interval allows (a drain may have been missed)',
    [...wokenAt0, ['pending', 4]],
    4,
    { at: 15, reason: 'interval' },
  ],
  ['the same on a run begun before delivery control: the re-wake', [...wokenAt0, ['pending', 4]], 4, { at: 900, reason: 'rewake' }, none],
  [
    'that look found the wake outstanding and only chatter: back to the re-wake',
    [...wokenAt0, ['pending', 4], ['refused', 15, { outstanding: true, hasPending: true, lastWokenAt: 0 }, 900]],
    15,
    { at: 900, reason: 'rewake' },
  ],
  [
    'the claim says the outstanding normal wake can be escalated at the interval end (a DM behind it): look then',
    [...wokenAt0, ['refused', 5, { outstanding: true, hasPending: true, lastWokenAt: 0 }, 15]],
    5,
    { at: 15, reason: 'escalation' },
  ],
  [
    'an escalation held back by a back-off: its end, still before the re-wake',
    [...wokenAt0, ['refused', 20, { outstanding: true, hasPending: true, lastWokenAt: 0 }, 300, 'backoff']],
    20,
    { at: 300, reason: 'backoff' },
  ],
  [
    'the same on a run begun before escalation: the re-wake',
    [...wokenAt0, ['refused', 5, { outstanding: true, hasPending: true, lastWokenAt: 0 }, 15]],
    5,
    { at: 900, reason: 'rewake' },
    deliveryControlOnly,
  ],
  [
    'the escalation was claimed: the re-wake of the new wake',
    [...wokenAt0, ['refused', 5, { outstanding: true, hasPending: true, lastWokenAt: 0 }, 15], ['claimed', 15]],
    16,
    { at: 915, reason: 'rewake' },
  ],
  [
    'held back by the FCM budget: when it refills',
    [['refused', 0, { outstanding: false, hasPending: true, lastWokenAt: null }, 180, 'budget']],
    1,
    { at: 180, reason: 'budget' },
  ],
  [
    'a message forgets a held-back answer (a DM may spend the reserve): one look now',
    [
      ['refused', 0, { outstanding: false, hasPending: true, lastWokenAt: null }, 180, 'budget'],
      ['pending', 2],
    ],
    2,
    { at: 2, reason: 'now' },
  ],
  ['a send that did not go through: its back-off', [...wokenAt0, ['deferred', 0, 60]], 1, { at: 60, reason: 'backoff' }],
  [
    'a message while the send was out, which then did not go through: at the interval end (the signal may be the end of that back-off)',
    [...wokenAt0, ['pending', 5], ['deferred', 8, 3_600]],
    8,
    { at: 15, reason: 'interval' },
  ],
  [
    'the same, replaying a history that waited out the back-off (no marker)',
    [...wokenAt0, ['pending', 5], ['deferred', 8, 3_600, 'markerless']],
    8,
    { at: 3_600, reason: 'backoff' },
  ],
  [
    'a message before the look began, a send that did not go through: its back-off',
    [
      ['pending', 0],
      ['claimed', 0],
      ['deferred', 8, 3_600],
    ],
    8,
    { at: 3_600, reason: 'backoff' },
  ],
  [
    "re-registered (a new endpoint) during a back-off: the back-off is the old endpoint's — look when the interval allows",
    [...wokenAt0, ['deferred', 0, 3_600], ['registered', 30]],
    30,
    { at: 30, reason: 'now' },
  ],
  [
    'the same on a run begun before that: the old back-off',
    [...wokenAt0, ['deferred', 0, 3_600], ['registered', 30]],
    30,
    { at: 3_600, reason: 'backoff' },
    deliveryControlOnly,
  ],
  ['the middle plan: a drained signal is taken at its word (idle)', [...wokenAt0, ['drained', 5]], 6, undefined, middle],
  [
    'the middle plan: a DM behind a normal wake escalates at the interval end',
    [...wokenAt0, ['refused', 5, { outstanding: true, hasPending: true, lastWokenAt: 0 }, 15]],
    5,
    { at: 15, reason: 'escalation' },
    middle,
  ],
  [
    "the middle plan: re-registered during a back-off, the old endpoint's back-off is forgotten",
    [...wokenAt0, ['deferred', 0, 3_600], ['registered', 30]],
    30,
    { at: 30, reason: 'now' },
    middle,
  ],
  ['a deletion: look now (the registration may be gone)', [...wokenAt0, ['deleted', 40]], 40, { at: 40, reason: 'now' }],
  [
    "a claim found pending rows and no wake outstanding, yet refused (the interval not over in PostgreSQL's eyes): a second later, not at once",
    [['refused', 0, { outstanding: false, hasPending: true, lastWokenAt: null }]],
    0,
    { at: 1, reason: 'interval' },
  ],
];

describe('DeviceState.nextCheck', () => {
  it.each(table)('%s', (_what, steps, nowSeconds, expected, patches) => {
    const next = replay(steps, patches ?? current).nextCheck(s(nowSeconds));
    expect(next).toEqual(expected === undefined ? undefined : { at: s(expected.at), reason: expected.reason });
  });
});

describe('the re-wake alarm', () => {
  it('serves re-wakes; looks at the interval, a back-off or the budget get timers of their own', () => {
    const state = replay(wokenAt0);
    expect(state.timerFor(state.nextCheck(s(1))!)).toBe('alarm');
    expect(state.timerFor({ at: s(15), reason: 'interval' })).toBe('timer');
    expect(replay(wokenAt0, deliveryControlOnly).timerFor(state.nextCheck(s(1))!)).toBe('timer');
    expect(replay(wokenAt0, middle).timerFor(state.nextCheck(s(1))!)).toBe('timer');
  });

  it('is armed once for a device woken again and again: the armed one fires first, and is re-armed only then', () => {
    const state = replay(wokenAt0);
    const first = state.nextCheck(s(1))!;
    expect(state.alarmToArm(first)).toBe(s(900));
    state.onAlarmArmed(s(900));
    // Woken again at 20 s and 40 s (a busy channel, the phone draining): no new alarm.
    for (const at of [20, 40]) {
      state.onPending();
      state.onClaimStarted();
      state.onClaimAnswered({ intervals, transport: 'unifiedpush' });
      state.onClaimed(s(at));
      expect(state.alarmToArm(state.nextCheck(s(at))!)).toBeUndefined();
    }
    // It fires at 900 s, before the re-wake of the 40 s wake: armed again, for that one.
    state.onAlarmFired();
    expect(state.nextCheck(s(900))).toEqual({ at: s(940), reason: 'rewake' });
    expect(state.alarmToArm(state.nextCheck(s(900))!)).toBe(s(940));
  });
});

describe('DeviceState across continue-as-new', () => {
  it('carries what the next run needs to keep the plan: outstanding, the last wake, a pending request, the intervals', () => {
    const before = replay([...wokenAt0, ['pending', 4]]);
    const after = new DeviceState('unifiedpush', before.carried(), current);
    expect(after.nextCheck(s(4))).toEqual(before.nextCheck(s(4)));
  });
});

/**
 * The wake policy as a table: (snapshot, now) → may a wake be claimed, at which priority, and if
 * not, from when and why. Times are seconds after a fixed origin; the policy is the design's
 * (15 s interval, 15 min re-wake) with an FCM budget of 20, one back every 3 min, 5 for DMs.
 */
import { describe, expect, it } from 'vitest';
import {
  budgetLeft,
  budgetReadyAt,
  budgetSpent,
  heldBackUntil,
  wakeVerdict,
  type DeviceSnapshot,
  type WakePolicy,
} from '../../../domain/wake-policy.js';

const policy: WakePolicy = { minIntervalMs: 15_000, rewakeAfterMs: 900_000, fcmBudget: { burst: 20, refillMs: 180_000, dmReserve: 5 } };
const t0 = Date.UTC(2026, 11, 4, 12, 0, 0);
const s = (seconds: number) => t0 + seconds * 1_000;

const idle: DeviceSnapshot = {
  transport: 'unifiedpush',
  outstanding: false,
  lastWakePriority: null,
  lastWokenAt: null,
  backoffUntil: null,
  budgetTat: null,
  hasPending: false,
  dmPending: false,
  testWake: false,
};
const channel = { hasPending: true, dmPending: false } as const;
const dm = { hasPending: true, dmPending: true } as const;
/** A normal wake sent at 0 s and not drained. */
const normalOutstanding = { outstanding: true, lastWakePriority: 'normal', lastWokenAt: s(0) } as const;
const highOutstanding = { outstanding: true, lastWakePriority: 'high', lastWokenAt: s(0) } as const;
/** An FCM device whose budget is spent down to the DM reserve (15 wakes in the last moment). */
const fcmAtReserve = { transport: 'fcm', budgetTat: s(15 * 180) } as const;

type Row = [what: string, snapshot: Partial<DeviceSnapshot>, nowSeconds: number, expected: Partial<ReturnType<typeof wakeVerdict>>];

const table: Row[] = [
  ['nothing pending: no wake, nothing to wait for', {}, 10, { due: false, readyAt: null }],
  ['a server-channel message, never woken: now, normal', channel, 10, { due: true, priority: 'normal', escalation: false }],
  ['a DM, never woken: now, high', dm, 10, { due: true, priority: 'high' }],
  ['inside the interval after a drained wake: at its end', { ...channel, lastWokenAt: s(0) }, 5, { due: false, readyAt: s(15) }],
  ['the interval is over after a drained wake: now', { ...channel, lastWokenAt: s(0) }, 15, { due: true }],
  ['a normal wake outstanding, more chatter: at the re-wake', { ...channel, ...normalOutstanding }, 20, { due: false, readyAt: s(900) }],
  ['a normal wake outstanding, the re-wake is due', { ...channel, ...normalOutstanding }, 900, { due: true, priority: 'normal', escalation: false }],
  [
    'a DM behind an outstanding normal wake, inside the interval: escalated at its end',
    { ...dm, ...normalOutstanding },
    5,
    { due: false, readyAt: s(15), escalation: true },
  ],
  [
    'a DM behind an outstanding normal wake, after the interval: escalated now',
    { ...dm, ...normalOutstanding },
    20,
    { due: true, priority: 'high', escalation: true },
  ],
  [
    'a DM behind an outstanding high wake: at the re-wake, no second escalation',
    { ...dm, ...highOutstanding },
    20,
    { due: false, readyAt: s(900), escalation: false },
  ],
  [
    'an outstanding wake of unknown priority (recorded before priorities): never escalated',
    { ...dm, ...highOutstanding, lastWakePriority: null },
    20,
    { due: false, readyAt: s(900) },
  ],
  ['a back-off in force: held back until it ends', { ...channel, backoffUntil: s(60) }, 10, { due: false, readyAt: s(60), heldBack: 'backoff' }],
  ['a back-off over: now', { ...channel, backoffUntil: s(60) }, 60, { due: true }],
  [
    'a back-off shorter than the interval: the interval decides, not held back',
    { ...channel, lastWokenAt: s(0), backoffUntil: s(10) },
    5,
    { due: false, readyAt: s(15) },
  ],
  [
    'a back-off holds an escalation too',
    { ...dm, ...normalOutstanding, backoffUntil: s(300) },
    20,
    { due: false, readyAt: s(300), heldBack: 'backoff', escalation: true },
  ],
  ['FCM, budget down to the reserve: chatter is held back', { ...channel, ...fcmAtReserve }, 0, { due: false, readyAt: s(180), heldBack: 'budget' }],
  ['FCM, budget down to the reserve: a DM spends the reserve', { ...dm, ...fcmAtReserve }, 0, { due: true, priority: 'high' }],
  [
    'FCM, budget down to the reserve: an escalation spends the reserve',
    { ...dm, ...fcmAtReserve, ...normalOutstanding },
    15,
    { due: true, escalation: true },
  ],
  [
    'FCM, budget empty: a DM waits for one refill',
    { ...dm, transport: 'fcm', budgetTat: s(20 * 180) },
    0,
    { due: false, readyAt: s(180), heldBack: 'budget' },
  ],
  ['UnifiedPush has no budget, whatever the bucket says', { ...channel, budgetTat: s(20 * 180) }, 0, { due: true }],
  ['a test wake, nothing pending: now, high', { testWake: true }, 10, { due: true, priority: 'high', escalation: false }],
  ['a test wake inside the interval: at its end', { testWake: true, lastWokenAt: s(0) }, 5, { due: false, readyAt: s(15) }],
  [
    'a test wake behind an outstanding high wake: not coalesced, at the interval',
    { ...channel, testWake: true, ...highOutstanding },
    20,
    { due: true, priority: 'high' },
  ],
  [
    'a test wake under a back-off: held back until it ends',
    { testWake: true, backoffUntil: s(60) },
    10,
    { due: false, readyAt: s(60), heldBack: 'backoff' },
  ],
  ['FCM, budget down to the reserve: a test wake spends the reserve', { testWake: true, ...fcmAtReserve }, 0, { due: true, priority: 'high' }],
  [
    'FCM, budget empty: a test wake waits for one refill',
    { testWake: true, transport: 'fcm', budgetTat: s(20 * 180) },
    0,
    { due: false, readyAt: s(180), heldBack: 'budget' },
  ],
  ['FCM with the budget turned off', { ...channel, ...fcmAtReserve }, 0, { due: true }],
];

describe('wakeVerdict', () => {
  it.each(table)('%s', (what, snapshot, nowSeconds, expected) => {
    const thePolicy = what.includes('turned off') ? { ...policy, fcmBudget: { ...policy.fcmBudget, burst: 0 } } : policy;
    const verdict = wakeVerdict(thePolicy, { ...idle, ...snapshot }, s(nowSeconds));
    expect(verdict).toMatchObject(expected);
    if (expected.heldBack === undefined) expect(verdict.heldBack).toBeUndefined();
    if (verdict.due) expect(verdict.readyAt).toBeNull();
  });

  it('never says due before readyAt, and is due at readyAt when nothing else changes', () => {
    for (const [, snapshot, nowSeconds] of table) {
      const full = { ...idle, ...snapshot };
      const verdict = wakeVerdict(policy, full, s(nowSeconds));
      if (verdict.due || verdict.readyAt === null) continue;
      expect(wakeVerdict(policy, full, verdict.readyAt - 1).due).toBe(false);
      expect(wakeVerdict(policy, full, verdict.readyAt).due).toBe(true);
    }
  });
});

describe('the FCM budget', () => {
  const budget = policy.fcmBudget;
  it('starts full: the burst for a DM, the burst less the reserve for chatter', () => {
    expect(budgetLeft(budget, null, s(0), 'high')).toBe(20);
    expect(budgetLeft(budget, null, s(0), 'normal')).toBe(15);
  });

  it('spends one wake per refill interval of the bucket, and refills one per interval', () => {
    let tat: number | null = null;
    for (let i = 0; i < 15; i++) tat = budgetSpent(budget, tat, s(0));
    expect(budgetLeft(budget, tat, s(0), 'normal')).toBe(0);
    expect(budgetLeft(budget, tat, s(0), 'high')).toBe(5);
    expect(budgetReadyAt(budget, tat, s(0), 'normal')).toBe(s(180));
    expect(budgetLeft(budget, tat, s(180), 'normal')).toBe(1);
  });
});

describe('heldBackUntil (what the device may be told)', () => {
  it('names a back-off in force with its end', () => {
    expect(heldBackUntil(policy, { ...idle, ...channel, backoffUntil: s(60) }, s(0))).toEqual({ reason: 'backoff', until: s(60) });
  });

  it('names the FCM budget only when something waits for it', () => {
    expect(heldBackUntil(policy, { ...idle, ...channel, ...fcmAtReserve }, s(0))).toEqual({ reason: 'budget', until: s(180) });
    expect(heldBackUntil(policy, { ...idle, ...fcmAtReserve }, s(0))).toBeNull();
    expect(heldBackUntil(policy, { ...idle, ...dm, ...fcmAtReserve }, s(0))).toBeNull();
  });
});

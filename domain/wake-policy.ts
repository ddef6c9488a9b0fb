/**
 * When may this device be woken: the one statement of the rule. Pure — no I/O, no clock, no
 * imports but types — so the workflow bundle, the activities and the tools share it.
 *
 * A wake may be claimed at `now` when rows are pending and every part of the rule allows it:
 *
 *   - coalescing: no wake outstanding (undrained), or the outstanding one is due for its
 *     re-wake (`rewakeAfterMs` after it), or it can be escalated (below);
 *   - the minimum interval: `minIntervalMs` since the last wake, drained or not;
 *   - no back-off in force (`backoffUntil`: the provider asked us to wait, the endpoint failed,
 *     or its origin is in outage);
 *   - FCM only, with a budget: the per-device wake budget (below).
 *
 * A wake's priority is high when a DM is pending, normal otherwise.
 *
 * **A test wake** (`POST /api/push/registration/test`, `push-admin wake`) is pending as a DM
 * is — one high wake, even with no row pending — under the interval, the back-off and the
 * budget alike; only coalescing does not hold it: an outstanding wake is what a test of a
 * silent phone is about, and waiting for its re-wake would answer nothing.
 *
 * **Escalation.** At most one wake is outstanding *per priority*, and only upward: a DM that
 * arrives while only a normal wake is outstanding gets one high wake as soon as the interval
 * allows, not at the re-wake. Android holds a normal FCM message (and a UnifiedPush
 * `Urgency: normal`) in Doze for as long as hours; a DM — a call's ring — must not wait behind
 * it. After the escalation a high wake is outstanding, so further DMs add nothing until the
 * drain or the re-wake. Providers collapse the two (`collapse_key`, `Topic: wake`).
 *
 * **The FCM wake budget** models FCM's throttle of collapsible messages — a burst of `burst`,
 * then one more every `refillMs` — as a GCRA bucket kept in one value, the theoretical arrival
 * time `tat` (ms; null = never spent = full):
 *
 *   spending one wake at `now` sets tat' = max(tat, now) + refillMs,
 *   allowed iff tat' − now ≤ (burst − floor) × refillMs,
 *
 * with floor 0 for a high wake and `dmReserve` for a normal one: server-channel chatter can
 * never spend the reserve a DM needs. `burst` 0 turns the budget off.
 *
 * The claim (activities/registration.ts) decides the same rule inside one conditional UPDATE,
 * so that two replicas can never both claim; test/integration/wake-policy-sql.test.ts holds
 * that SQL equal to `wakeVerdict` on generated snapshots.
 */
import type { TransportName, WakePriority } from './vocabulary.js';

/** The per-device FCM wake budget (`PUSH_FCM_WAKE_BURST`, `_REFILL_MS`, `PUSH_FCM_DM_RESERVE`). */
export interface FcmBudget {
  readonly burst: number;
  readonly refillMs: number;
  readonly dmReserve: number;
}

/** The coalescing intervals (`PUSH_MIN_INTERVAL_MS`, `PUSH_REWAKE_AFTER_MS`). */
export interface Intervals {
  readonly minIntervalMs: number;
  readonly rewakeAfterMs: number;
}

/** Everything configurable about when a device may be woken. */
export interface WakePolicy extends Intervals {
  readonly fcmBudget: FcmBudget;
}

/**
 * What holds a device's wakes back besides coalescing, as a look at PostgreSQL saw it: the FCM
 * budget (FCM registrations with a budget) and a back-off in force.
 */
export interface WakeHolds {
  readonly budget?: FcmBudget & { readonly tat: number | null };
  readonly backoff?: { readonly until: number; readonly reason: string | null };
}

/** One device's registration and pending rows as PostgreSQL holds them at one moment (times in ms). */
export interface DeviceSnapshot {
  readonly transport: TransportName;
  /** A wake was sent and the device has not drained since. */
  readonly outstanding: boolean;
  /**
   * The priority of the last wake claimed (what is outstanding, while `outstanding`). null for
   * wakes claimed before priorities were recorded: taken as high, so never escalated.
   */
  readonly lastWakePriority: WakePriority | null;
  /** When the last wake went out (a send long after its claim counts from its delivery), or null: never. */
  readonly lastWokenAt: number | null;
  /** No wake before this time (a back-off in force), or null. */
  readonly backoffUntil: number | null;
  /** The FCM budget's theoretical arrival time, or null: full. */
  readonly budgetTat: number | null;
  readonly hasPending: boolean;
  readonly dmPending: boolean;
  /** A test wake was asked for and no provider has accepted it yet. */
  readonly testWake: boolean;
}

/** Why a wake that coalescing would allow is not: a back-off in force, or the FCM budget. */
export type HeldBack = 'backoff' | 'budget';

export interface WakeVerdict {
  /** A wake may be claimed now. */
  readonly due: boolean;
  /** The priority a wake claimed now carries: high iff a DM is pending. */
  readonly priority: WakePriority;
  /** The wake would escalate an outstanding normal wake. */
  readonly escalation: boolean;
  /** Not due: the earliest time (≥ now) every part of the rule allows a wake; null when nothing is pending. */
  readonly readyAt: number | null;
  /** Not due although coalescing allows it (interval over, nothing outstanding in the way). */
  readonly heldBack?: HeldBack;
}

/** The priority a wake of this device carries: high for a DM, or a test wake. */
export function wakePriority(snapshot: Pick<DeviceSnapshot, 'dmPending' | 'testWake'>): WakePriority {
  return snapshot.dmPending || snapshot.testWake ? 'high' : 'normal';
}

/** Something to wake the device for: pending rows, or a test wake. */
export function hasWork(snapshot: Pick<DeviceSnapshot, 'hasPending' | 'testWake'>): boolean {
  return snapshot.hasPending || snapshot.testWake;
}

/** The earliest time the minimum interval allows the next wake (now, if never woken). */
export function intervalEndsAt(policy: Intervals, lastWokenAt: number | null, now: number): number {
  return lastWokenAt === null ? now : lastWokenAt + policy.minIntervalMs;
}

/** When an undrained wake of `lastWokenAt` is woken again. */
export function rewakeAt(policy: Intervals, lastWokenAt: number | null, now: number): number {
  return lastWokenAt === null ? now : lastWokenAt + policy.rewakeAfterMs;
}

/** An outstanding normal wake with a DM now pending: the one upward step allowed. */
export function canEscalate(snapshot: Pick<DeviceSnapshot, 'outstanding' | 'lastWakePriority' | 'dmPending'>): boolean {
  return snapshot.outstanding && snapshot.lastWakePriority === 'normal' && snapshot.dmPending;
}

/** Whether the device's wakes are under the FCM budget. */
export function budgeted(policy: WakePolicy, transport: TransportName): boolean {
  return transport === 'fcm' && policy.fcmBudget.burst > 0;
}

function floorOf(budget: FcmBudget, priority: WakePriority): number {
  return priority === 'high' ? 0 : budget.dmReserve;
}

/** Wakes of this priority that could go out back to back at `now`. */
export function budgetLeft(budget: FcmBudget, tat: number | null, now: number, priority: WakePriority): number {
  const used = Math.max(tat ?? now, now) - now;
  return Math.max(0, Math.floor(((budget.burst - floorOf(budget, priority)) * budget.refillMs - used) / budget.refillMs));
}

/** The earliest time ≥ now at which the budget allows one wake of this priority. */
export function budgetReadyAt(budget: FcmBudget, tat: number | null, now: number, priority: WakePriority): number {
  if (tat === null) return now;
  return Math.max(now, tat + budget.refillMs - (budget.burst - floorOf(budget, priority)) * budget.refillMs);
}

/** The bucket after spending one wake at `now` (what the claim writes). */
export function budgetSpent(budget: FcmBudget, tat: number | null, now: number): number {
  return Math.max(tat ?? now, now) + budget.refillMs;
}

/** The rule: may a wake be claimed at `now`, at which priority, and if not, from when. */
export function wakeVerdict(policy: WakePolicy, snapshot: DeviceSnapshot, now: number): WakeVerdict {
  const priority = wakePriority(snapshot);
  const escalation = canEscalate(snapshot);
  if (!hasWork(snapshot)) return { due: false, priority, escalation: false, readyAt: null };
  const coalescingAt = Math.max(
    intervalEndsAt(policy, snapshot.lastWokenAt, now),
    snapshot.outstanding && !escalation && !snapshot.testWake ? rewakeAt(policy, snapshot.lastWokenAt, now) : now,
  );
  const backoffAt = snapshot.backoffUntil ?? now;
  const budgetAt = budgeted(policy, snapshot.transport) ? budgetReadyAt(policy.fcmBudget, snapshot.budgetTat, now, priority) : now;
  const readyAt = Math.max(now, coalescingAt, backoffAt, budgetAt);
  if (readyAt <= now) return { due: true, priority, escalation, readyAt: null };
  const heldBack: HeldBack | undefined = coalescingAt > now ? undefined : backoffAt > now ? 'backoff' : 'budget';
  return { due: false, priority, escalation, readyAt, ...(heldBack === undefined ? {} : { heldBack }) };
}

/** What the device's owner may be told of why its wakes wait, if they do (the `delivery` of `GET /api/push/registration`). */
export function heldBackUntil(
  policy: WakePolicy,
  snapshot: DeviceSnapshot,
  now: number,
): { readonly reason: HeldBack; readonly until: number } | null {
  if (snapshot.backoffUntil !== null && snapshot.backoffUntil > now) return { reason: 'backoff', until: snapshot.backoffUntil };
  if (!budgeted(policy, snapshot.transport) || !hasWork(snapshot)) return null;
  const until = budgetReadyAt(policy.fcmBudget, snapshot.budgetTat, now, wakePriority(snapshot));
  return until > now ? { reason: 'budget', until } : null;
}

/** A registration row as every reader of `push_registrations` selects it (snake case, as PostgreSQL names the columns). */
export interface SnapshotRow {
  readonly transport: TransportName;
  readonly wake_outstanding: boolean;
  readonly last_wake_priority: WakePriority | null;
  readonly last_woken_at: Date | null;
  readonly backoff_until: Date | null;
  readonly fcm_budget_tat: Date | null;
  readonly has_pending: boolean;
  readonly dm_pending: boolean;
  readonly test_wake_pending: boolean;
}

/** The snapshot a stored registration row describes. */
export function snapshotOf(row: SnapshotRow): DeviceSnapshot {
  return {
    transport: row.transport,
    outstanding: row.wake_outstanding,
    lastWakePriority: row.last_wake_priority,
    lastWokenAt: row.last_woken_at?.getTime() ?? null,
    backoffUntil: row.backoff_until?.getTime() ?? null,
    budgetTat: row.fcm_budget_tat?.getTime() ?? null,
    hasPending: row.has_pending,
    dmPending: row.dm_pending,
    testWake: row.test_wake_pending,
  };
}

/**
 * The per-registration FCM wake budget (issue 19, docs/transports.md), modelled on FCM's
 * throttle of collapsible messages: a burst of `burst` wakes, then one more every `refillMs`.
 * It is a GCRA token bucket kept in ONE value, the theoretical arrival time `tat` (ms; null =
 * never spent = full), so the claim can test and spend it in its single conditional UPDATE:
 *
 *   spending one wake at `now` sets tat' = max(tat, now) + refillMs,
 *   allowed iff tat' − now ≤ (burst − floor) × refillMs,
 *
 * with floor = 0 for a wake with a DM pending (high priority) and `dmReserve` for a wake of
 * server channels only (normal): chatter can never spend the reserve a DM needs.
 *
 * The SQL of the claim (activities/registration.ts) implements the same rule; these functions
 * say what it means for the `state` query, `push-admin` and the held-back timer. Pure.
 */
import type { WakePriority } from '../src/domain.js';

export interface FcmBudget {
  readonly burst: number;
  readonly refillMs: number;
  readonly dmReserve: number;
}

function floorOf(budget: FcmBudget, priority: WakePriority): number {
  return priority === 'high' ? 0 : budget.dmReserve;
}

/** Wakes of this priority that could go out back to back at `now`. */
export function budgetLeft(budget: FcmBudget, tat: number | null, now: number, priority: WakePriority): number {
  const used = Math.max(tat ?? now, now) - now;
  return Math.max(0, Math.floor(((budget.burst - floorOf(budget, priority)) * budget.refillMs - used) / budget.refillMs));
}

/** The earliest time ≥ now at which one wake of this priority is allowed. */
export function budgetReadyAt(budget: FcmBudget, tat: number | null, now: number, priority: WakePriority): number {
  if (tat === null) return now;
  return Math.max(now, tat + budget.refillMs - (budget.burst - floorOf(budget, priority)) * budget.refillMs);
}

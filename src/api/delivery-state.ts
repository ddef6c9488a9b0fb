/**
 * The device's own delivery state, as `GET`/`PUT /api/push/registration` report it: when it was
 * last woken, and whether its wakes are held back now, why, and until when. A phone's
 * notification settings can then say "your distributor is rate-limiting you until 14:20"
 * instead of nothing. The rule is the wake policy's (workflows/wake-policy.ts `heldBackUntil`),
 * read from the same columns the claim reads; only the caller's own registration is ever shown.
 */
import type { BackoffCause, HoldReason } from '../domain.js';
import { gateOf, heldBackUntil, type StoredGate, type WakePolicy } from '../../workflows/wake-policy.js';

export interface DeliveryRow extends StoredGate {
  readonly backoff_cause: BackoffCause | null;
  readonly failures: number;
}

export interface DeliveryJson {
  readonly last_woken_at: string | null;
  readonly delivery: {
    readonly state: 'ok' | 'held';
    readonly reason?: HoldReason;
    readonly until?: string;
    readonly failures: number;
  };
}

export function deliveryJson(policy: WakePolicy, row: DeliveryRow, now: number): DeliveryJson {
  const held = heldBackUntil(policy, gateOf(row), now);
  const last_woken_at = row.last_woken_at?.toISOString() ?? null;
  if (held === null) return { last_woken_at, delivery: { state: 'ok', failures: row.failures } };
  // A back-off set before its cause was recorded came from a failed send.
  const reason: HoldReason = held.reason === 'budget' ? 'budget' : (row.backoff_cause ?? 'failing');
  return { last_woken_at, delivery: { state: 'held', reason, until: new Date(held.until).toISOString(), failures: row.failures } };
}

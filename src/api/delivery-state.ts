/**
 * The device's own delivery state, as `GET`/`PUT /api/push/registration` report it: when a wake
 * last reached its provider and when the device last drained, how many wakes it has not drained,
 * whether the phone saw its HIGH wakes lowered, and whether its wakes are held back now, why, and
 * until when. A phone's notification settings can then say "your distributor is rate-limiting
 * you until 14:20" instead of nothing. The rule is the wake policy's (domain/wake-policy.ts `heldBackUntil`),
 * read from the same columns the claim reads; only the caller's own registration is ever shown.
 */
import type { BackoffHold, Hold } from '../../domain/vocabulary.js';
import { snapshotOf, heldBackUntil, type SnapshotRow, type WakePolicy } from '../../domain/wake-policy.js';

export interface DeliveryRow extends SnapshotRow {
  readonly backoff_cause: BackoffHold | null;
  readonly failures: number;
  /** When a provider last accepted a wake (`last_woken_at` is the claim's time: wake-policy.ts). */
  readonly last_delivered_at: Date | null;
  readonly last_drained_at: Date | null;
  readonly wakes_since_drain: number;
  readonly priority_lowered: boolean;
}

export interface DeliveryJson {
  /** When a wake last went out to the device and its provider accepted it. */
  readonly last_woken_at: string | null;
  readonly last_drained_at: string | null;
  readonly delivery: {
    readonly state: 'ok' | 'held';
    readonly reason?: Hold;
    readonly until?: string;
    readonly failures: number;
    readonly wakes_since_drain: number;
    readonly priority_lowered: boolean;
  };
}

export function deliveryJson(policy: WakePolicy, row: DeliveryRow, now: number): DeliveryJson {
  const held = heldBackUntil(policy, snapshotOf(row), now);
  const times = { last_woken_at: row.last_delivered_at?.toISOString() ?? null, last_drained_at: row.last_drained_at?.toISOString() ?? null };
  const counts = { failures: row.failures, wakes_since_drain: row.wakes_since_drain, priority_lowered: row.priority_lowered };
  if (held === null) return { ...times, delivery: { state: 'ok', ...counts } };
  // A back-off set before its cause was recorded came from a failed send.
  const reason: Hold = held.reason === 'budget' ? 'budget' : (row.backoff_cause ?? 'failing');
  return { ...times, delivery: { state: 'held', reason, until: new Date(held.until).toISOString(), ...counts } };
}

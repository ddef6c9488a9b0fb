/**
 * What a registration workflow keeps of its device across runs (`CarriedState`, the input of its
 * next run after continue-as-new) and what its `state` query shows (`RegistrationStateView`).
 * Pure types: the workflow, its query's readers (push-admin, the demo) and the device's state
 * (device-state.ts) share them. A field here is on the wire — carried state is recorded in
 * histories — so fields are only ever added.
 */
import type { TransportName } from './vocabulary.js';

export interface CarriedState {
  readonly outstanding: boolean;
  /**
   * Workflow time (ms since epoch) of the last wake, or null: the device's last woken at (on the
   * wire under its first name, which recorded histories hold).
   */
  readonly lastWakeAt: number | null;
  /** A signal said there may be new pending rows, not yet checked. */
  readonly checkRequested: boolean;
  /** The worker's PUSH_MIN_INTERVAL_MS / PUSH_REWAKE_AFTER_MS, as last reported by the claim. */
  readonly intervals?: { readonly minIntervalMs: number; readonly rewakeAfterMs: number };
  /** When the last claim's wake went out, if long after its claim (workflow time, ms). */
  readonly wokenAt?: number;
}

/**
 * Why the next look waits: the minimum interval, the re-wake, the escalation of an outstanding
 * normal wake (a DM behind it), a back-off in force, the FCM budget.
 */
export type TimerReason = 'interval' | 'rewake' | 'escalation' | 'backoff' | 'budget';

/** The FCM wake budget as the workflow last saw it (FCM registrations with a budget only). */
export interface BudgetView {
  readonly burst: number;
  /** Wakes that could go out back to back now with a DM pending (high priority). */
  readonly left: number;
  /** … and for server channels only (normal priority: the DM reserve is not theirs). */
  readonly leftForServerChannels: number;
  readonly refillMs: number;
  readonly dmReserve: number;
}

export interface RegistrationStateView {
  readonly userId: string;
  readonly deviceId: string;
  readonly transport: TransportName;
  readonly outstanding: boolean;
  /** RFC 3339, or null if never woken in this workflow's memory. */
  readonly lastWokenAt: string | null;
  /** The next look and why; null when idle or looking now. */
  readonly nextTimer: { readonly at: string; readonly reason: TimerReason } | null;
  /**
   * The re-wake alarm, while armed: it may fire before the re-wake it stands for
   * (an earlier wake's), and is then armed again for the later one.
   */
  readonly rewakeAlarm?: string | null;
  readonly wakesThisRun: number;
  readonly checkRequested: boolean;
  /** FCM only, with a budget configured; null otherwise (and before the first look). */
  readonly budget?: BudgetView | null;
  /** A back-off in force (rate limit, failures, an outage), as the workflow last saw it. */
  readonly backoff?: { readonly until: string; readonly reason: string | null } | null;
}

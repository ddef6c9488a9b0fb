/**
 * The messages of a registration workflow (contract §9): its input, signals and query. Kept
 * apart from the workflow body so the api, the bridge and tools import them without it.
 * Nothing here may carry a token, an endpoint or a key.
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';

export type Transport = 'fcm' | 'unifiedpush';

export interface RegistrationWorkflowInput {
  readonly userId: string;
  readonly deviceId: string;
  readonly transport: Transport;
  /** State carried across continue-as-new. */
  readonly carried?: CarriedState;
  /** Continue as new after this many wakes in one run (tests use a small number). */
  readonly continueAsNewAfterWakes?: number;
  /** Run claim and send as local activities (default; see docs/architecture.md) or regular ones. */
  readonly activityKind?: 'local' | 'regular';
}

export interface CarriedState {
  readonly outstanding: boolean;
  /** Workflow time (ms since epoch) of the last wake, or null. */
  readonly lastWakeAt: number | null;
  /** A signal said there may be new pending rows, not yet checked. */
  readonly checkRequested: boolean;
  /** The worker's PUSH_MIN_INTERVAL_MS / PUSH_REWAKE_AFTER_MS, as last reported by the claim. */
  readonly intervals?: { readonly minIntervalMs: number; readonly rewakeAfterMs: number };
}

/** New pending rows exist for this device (bridge, maintenance healing). */
export const pendingSignal = defineSignal('pending');
/** The device drained (api, after its transaction committed). */
export const drainedSignal = defineSignal('drained');
/** The registration was deleted: check, and end if it is gone. */
export const stopSignal = defineSignal('stop');
/** The registration was (re-)created or changed transport (api `PUT`). */
export const registeredSignal = defineSignal<[{ readonly transport: Transport }]>('registered');

export type TimerReason = 'interval' | 'rewake';

export interface RegistrationStateView {
  readonly userId: string;
  readonly deviceId: string;
  readonly transport: Transport;
  readonly outstanding: boolean;
  /** RFC 3339, or null if never woken in this workflow's memory. */
  readonly lastWakeAt: string | null;
  readonly nextTimer: { readonly at: string; readonly reason: TimerReason } | null;
  readonly wakesThisRun: number;
  readonly checkRequested: boolean;
}

export const stateQuery = defineQuery<RegistrationStateView>('state');

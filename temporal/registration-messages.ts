/**
 * The messages of a registration workflow (docs/design.md, Temporal): its input, signals and
 * query, as Temporal names them. Kept apart from the workflow body so the api, the bridge and
 * tools import them without it; what they carry is domain/registration-state.ts. Nothing here
 * may carry a token, an endpoint or a key, and a name here is on the wire: recorded histories
 * hold it.
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { CarriedState, RegistrationStateView } from '../domain/registration-state.js';
import type { TransportName } from '../domain/vocabulary.js';

export interface RegistrationWorkflowInput {
  readonly userId: string;
  readonly deviceId: string;
  readonly transport: TransportName;
  /** State carried across continue-as-new. */
  readonly carried?: CarriedState;
  /** Continue as new after this many wakes in one run (tests use a small number). */
  readonly continueAsNewAfterWakes?: number;
  /**
   * Set by every starter of this release and by continue-as-new: a worker that begins the run
   * gives it today's plan without recording a patch marker (each costs a run two history events,
   * the marker and the SDK's upsert of `TemporalChangeVersion`), and claims and sends each wake
   * in one local activity. Absent, the run asks for its plan's patches as runs always did. An
   * earlier worker that begins a run with it set ignores it and records its own markers; a
   * replay finds them and follows that plan (workflows/registration.ts, `planOfRun`).
   */
  readonly beginsUnmarked?: true;
}

/** New pending rows exist for this device (bridge, maintenance healing). */
export const pendingSignal = defineSignal('pending');
/** The device drained (api, after its transaction committed). */
export const drainedSignal = defineSignal('drained');
/**
 * The registration was deleted: check, and end if it is gone. On the wire it is `stop`, its
 * first name: recorded histories hold it, so the name stays.
 */
export const deletedSignal = defineSignal('stop');
/** The registration was (re-)created or changed transport (api `PUT`). */
export const registeredSignal = defineSignal<[{ readonly transport: TransportName }]>('registered');

export const stateQuery = defineQuery<RegistrationStateView>('state');

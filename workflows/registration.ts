/**
 * One long-lived workflow per push registration: the actor that coalesces wakes by the wake
 * policy (wake-policy.ts).
 *
 *   - at most one outstanding wake per priority, and only upward: a wake is claimed in
 *     PostgreSQL (a conditional UPDATE); a DM behind an outstanding normal wake escalates it once;
 *   - at least `minIntervalMs` between two wakes, even after a drain: a durable timer;
 *   - a re-wake after `rewakeAfterMs` while the wake is undrained and rows are pending;
 *   - a message inside the interval is woken when it ends (this replaces the design's sweeper);
 *   - a wake held back (FCM budget) or backed off (rate limit, failures, outage) waits on one
 *     durable timer, to the time the claim said it could succeed;
 *   - an idle device holds no timer at all.
 *
 * Signals are hints; PostgreSQL is the truth. The workflow ends when its registration is gone.
 * Its history holds ids, priorities and times — never a token, an endpoint or a key.
 */
import {
  allHandlersFinished,
  CancellationScope,
  condition,
  continueAsNew,
  patched,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
  type LocalActivityOptions,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { ClaimAndSendResult, ClaimResult, SendResult } from '../activities/registration.js';
import { PushTransport } from '../temporal/names.js';
import { currentBehaviours, DeviceState, type NextCheck, type RunBehaviours } from '../domain/device-state.js';
import {
  drainedSignal,
  pendingSignal,
  registeredSignal,
  stateQuery,
  deletedSignal,
  type RegistrationWorkflowInput,
} from '../temporal/registration-messages.js';
import type { TransportName } from '../domain/vocabulary.js';
import { sendResultOf, type EarlierSendResult } from './send-result.js';
import { sendAttemptTimeoutMs } from '../domain/send-time-limit.js';

export interface RegistrationWorkflowResult {
  readonly ended: 'registration-deleted';
  readonly wakesThisRun: number;
}

/** Database errors: retry soon, for as long as it takes (the claim is idempotent). */
const claimRetry = { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' } as const;
/**
 * What still fails the send activity: unexpected errors (PostgreSQL down). A wake the provider
 * did not take, or our configuration could not send, is not a failure of the activity: it
 * returns `deferred` or `misconfigured`, and the claim refuses until its back-off is over.
 * (Workers before that failed it with `TransportMisconfigured`; such a retry ends in
 * `misconfigured` on today's worker.)
 */
const sendRetry = { initialInterval: '10s', backoffCoefficient: 2, maximumInterval: '10m' } as const;

/** The claim's and the send's time limits and retries. */
const claimAttemptTimeoutMs = 15_000;
const claimActivityOptions = { startToCloseTimeout: claimAttemptTimeoutMs, retry: claimRetry } as const;
// Per attempt: the send's worst case (send-time-limit.ts). No scheduleToClose: a
// wake our misconfiguration holds back is retried until a worker can send it.
const sendActivityOptions = { startToCloseTimeout: sendAttemptTimeoutMs, retry: sendRetry } as const;

// Backoffs of a local activity longer than `localRetryThreshold` become durable workflow
// timers instead of sleeps inside the worker: a worker restart does not lose them.
const localRetryThreshold = '1s';
const claims = proxyLocalActivities<Activities>({ ...claimActivityOptions, localRetryThreshold } satisfies LocalActivityOptions);
const sends = proxyLocalActivities<Activities>({ ...sendActivityOptions, localRetryThreshold } satisfies LocalActivityOptions);
// Claim and send in one: the claim's retries (what fails it is the database), the time of both.
const looks = proxyLocalActivities<Activities>({
  startToCloseTimeout: claimAttemptTimeoutMs + sendAttemptTimeoutMs,
  retry: claimRetry,
  localRetryThreshold,
} satisfies LocalActivityOptions);

/**
 * Continue as new after this many wakes even if the server does not suggest it yet. At 5–11
 * history events per wake→drain cycle, quiet to busy (measured by `make bench`), a run stays
 * near 1,000–2,200 events, so a workflow that falls out of the worker cache (or moves to another worker)
 * replays little before its next wake.
 */
const defaultContinueAsNewAfterWakes = 200;

/** Patch id: a claim whose workflow task was lost is sent again instead of waiting for the re-wake. */
export const resendUnrecordedClaimPatch = 'resend-unrecorded-claim';
/**
 * Patch id: a send deferred while a `pending` signal came looks again at the interval's end
 * (`DeviceState.onDeferred`). Asked only then, so a run records its marker at most once, and
 * only when it met the case; a history without the marker replays the back-off it waited.
 */
export const deferralHeedsSignalsPatch = 'deferral-heeds-signals';
/**
 * Patch ids of the run's later behaviours (domain/device-state.ts `RunBehaviours` says what each
 * does). They are on the wire: a run's history holds the markers of the ones it began with.
 */
const deliveryControlPatch = 'delivery-control';
const leanPlanPatch = 'lean-plan';
/** Two patches of the workflow before `lean-plan`, which `lean-plan` took in (see `behavioursFromMarkers`). */
const escalationPatch = 'escalation';
const registrationEndsBackoffPatch = 'registration-ends-backoff';

/**
 * The behaviours of a run that was not begun unmarked (`planOfRun`), asked at its start. Such a
 * run begun by a worker of 1.0.0 or later records `delivery-control` and `lean-plan`, and has
 * every behaviour. A run begun by a worker before
 * `lean-plan` (releases before 1.0.0) recorded `delivery-control`, `escalation`,
 * `registration-ends-backoff`: replayed, `lean-plan` is absent (false, no marker asked for), and
 * those two must be asked for next, in that order, or the SDK fails the task on the first marker
 * nobody asked for (TMPRL1100). A run begun before those has neither: `patched()` is false for
 * both while replaying. Not replaying, `lean-plan` is always true, so a new run never records
 * the older markers.
 */
function behavioursFromMarkers(): RunBehaviours {
  const signalAsksAtInterval = patched(deliveryControlPatch);
  if (patched(leanPlanPatch)) return { ...currentBehaviours, signalAsksAtInterval };
  const escalates = patched(escalationPatch);
  const registrationEndsBackoff = patched(registrationEndsBackoffPatch);
  return { signalAsksAtInterval, escalates, registrationEndsBackoff, drainsLearnedFromClaims: false, rewakeAlarm: false };
}

/** What a run does, fixed at its start. */
interface RunPlan {
  readonly behaviours: RunBehaviours;
  /** Each look is one local activity, `claimAndSendWake`; else `claimWake`, then `sendWake`. */
  readonly claimSends: boolean;
}

/**
 * The plan of this run. A run begun by a worker of this release with `beginsUnmarked` has
 * today's behaviours and records no marker: not replaying, nothing is asked. Replaying such a
 * run, its history may hold the markers of an earlier worker that began it (one that ignored
 * the field, while the workers were being replaced): every plan since `delivery-control`
 * records that marker first, so it says which. Asking for a marker while replaying records
 * nothing when the history has none.
 */
function planOfRun(input: RegistrationWorkflowInput): RunPlan {
  const unmarked = input.beginsUnmarked === true && (!workflowInfo().unsafe.isReplaying || !patched(deliveryControlPatch));
  return unmarked ? { behaviours: currentBehaviours, claimSends: true } : { behaviours: behavioursFromMarkers(), claimSends: false };
}

export async function registrationWorkflow(input: RegistrationWorkflowInput): Promise<RegistrationWorkflowResult> {
  const { userId, deviceId } = input;
  const plan = planOfRun(input);
  const state = new DeviceState(input.transport, input.carried, plan.behaviours);
  const alarm = new RewakeAlarm(state);

  setHandler(pendingSignal, () => state.onPending());
  setHandler(drainedSignal, () => state.onDrained());
  setHandler(deletedSignal, () => state.onDeleted());
  setHandler(registeredSignal, ({ transport }) => {
    showTransport(transport);
    state.onRegistered(transport);
  });
  setHandler(stateQuery, () => state.view(userId, deviceId, Date.now()));

  for (;;) {
    setCurrentDetails(state.details(Date.now()));
    if (shouldContinueAsNew(state, input)) {
      await condition(allHandlersFinished);
      return continueAsNew<typeof registrationWorkflow>({ ...input, carried: state.carried(), beginsUnmarked: true });
    }
    const next = state.nextCheck(Date.now());
    if (!(await waitUntilDue(state, input, next, alarm))) continue;

    state.onClaimStarted();
    const now = Date.now();
    const claimInput = { userId, deviceId, now, ...(state.wokenAt === undefined ? {} : { wokenAt: state.wokenAt }) };
    const look: ClaimAndSendResult = plan.claimSends ? await looks.claimAndSendWake(claimInput) : { claim: await claims.claimWake(claimInput) };
    const claim: ClaimResult = look.claim;
    if (claim.status === 'gone') {
      if (state.registeredSinceLastClaim) continue; // re-registered while we looked: look again
      await condition(allHandlersFinished);
      return { ended: 'registration-deleted', wakesThisRun: state.wakesThisRun };
    }
    state.onClaimAnswered(claim);
    showTransport(claim.transport);
    if (claim.status === 'not-claimed') {
      // A claim this workflow made in a task lost with its worker: its wake may never have
      // been sent. Send it now (at least once) rather than leave the device without a wake
      // until the re-wake — 15 minutes in production. A wake that did go out and is still
      // undrained is sent twice: the provider collapses the two (collapse_key, Topic: wake).
      if (!state.onObserved(claim.observed, now, claim.readyAt, claim.heldBack) || !patched(resendUnrecordedClaimPatch)) continue;
      state.onClaimed(claim.observed.lastWokenAt!);
    } else {
      state.onClaimed(now);
    }
    setCurrentDetails(state.details(Date.now()));
    const recorded: SendResult | EarlierSendResult =
      look.sent ??
      (await sends.sendWake({
        registrationId: claim.registrationId,
        userId,
        deviceId,
        priority: claim.priority,
        now: Date.now(),
        ...(claim.status === 'claimed' && claim.messageAt !== undefined ? { messageAt: claim.messageAt } : {}),
      }));
    const sent = sendResultOf(recorded);
    // A dead token was deleted with its registration: the next look finds it gone and ends.
    if (sent?.kind === 'dead' || sent?.kind === 'gone') state.onDeleted();
    // Not delivered: the claim was released with a back-off; look again when it is over.
    else if (sent?.kind === 'deferred' || sent?.kind === 'misconfigured')
      state.onDeferred(sent.until, sent.reason, state.signalledDuringLook && patched(deferralHeedsSignalsPatch));
    // Sent minutes after its claim (our configuration was fixed meanwhile): a wake of now,
    // else the next look would take it for a re-wake already due.
    else if (sent?.kind === 'delivered') state.onDelivered(Date.now());
  }
}

/**
 * Waits for `next` (undefined: no timer at all). Returns true when it is due, false when the
 * plan changed first (a signal moved the next check, or the re-wake alarm fired early) and
 * must be made again.
 */
async function waitUntilDue(state: DeviceState, input: RegistrationWorkflowInput, next: NextCheck | undefined, alarm: RewakeAlarm): Promise<boolean> {
  const replan = () => shouldContinueAsNew(state, input) || !sameCheck(state.nextCheck(Date.now()), next);
  if (next === undefined) {
    await condition(replan);
    return false;
  }
  if (next.at - Date.now() <= 0) return true;
  if (state.timerFor(next) === 'alarm') {
    alarm.armFor(next);
    await condition(() => replan() || alarm.fired);
    return alarm.takeFired() && Date.now() >= next.at && !replan();
  }
  const changed = await condition(replan, next.at - Date.now());
  return !changed;
}

/**
 * The re-wake alarm (`rewakeAlarm`): one durable timer that outlives the looks in between, so a
 * device woken again and again does not start a re-wake timer per wake. It is armed when none
 * is armed or the armed one would fire after the re-wake due; one that fires before (it stood
 * for an earlier wake) is simply armed again for the later re-wake.
 */
class RewakeAlarm {
  private firedFlag = false;
  private scope: CancellationScope | undefined;

  constructor(private readonly state: DeviceState) {}

  get fired(): boolean {
    return this.firedFlag;
  }

  /** Whether it fired since the last call (and forgets that it did). */
  takeFired(): boolean {
    const fired = this.firedFlag;
    this.firedFlag = false;
    return fired;
  }

  armFor(next: NextCheck): void {
    const at = this.state.alarmToArm(next);
    if (at === undefined) return;
    this.scope?.cancel();
    const scope = new CancellationScope();
    this.scope = scope;
    this.firedFlag = false;
    this.state.onAlarmArmed(at);
    scope
      .run(() => sleep(at - Date.now()))
      .then(
        () => {
          if (this.scope !== scope) return;
          this.scope = undefined;
          this.firedFlag = true;
          this.state.onAlarmFired();
        },
        () => undefined, // cancelled: an earlier alarm replaced it
      );
  }
}

function sameCheck(a: NextCheck | undefined, b: NextCheck | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.reason !== 'now' && a.at === b.at && a.reason === b.reason;
}

function shouldContinueAsNew(state: DeviceState, input: RegistrationWorkflowInput): boolean {
  return workflowInfo().continueAsNewSuggested || state.wakesThisRun >= (input.continueAsNewAfterWakes ?? defaultContinueAsNewAfterWakes);
}

/** The `PushTransport` search attribute follows the registration's transport. */
function showTransport(transport: TransportName): void {
  if (workflowInfo().typedSearchAttributes.get(PushTransport) !== transport) {
    upsertSearchAttributes([{ key: PushTransport, value: transport }]);
  }
}

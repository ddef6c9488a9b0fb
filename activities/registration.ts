/**
 * The registration workflow's two activities. They take ids and load everything secret
 * themselves, so a workflow history never holds a token, an endpoint or a key.
 *
 * claimWake — one conditional UPDATE decides, by the wake policy (domain/wake-policy.ts),
 *             whether this device gets a wake now, and at which priority.
 * sendWake  — loads the registration, sends through its transport (behind the outage
 *             detector), and records the outcome: a wake that did not go through releases the
 *             claim with a back-off instead of holding an activity in Temporal's retry.
 */
import { ApplicationFailure, CancelledFailure, Context } from '@temporalio/activity';
import { sql } from 'slonik';
import { z } from 'zod';
import type { DatabasePool } from '../src/db/pool.js';
import type { Logger } from '../src/observability/log.js';
import { providerAnswer, type DeliveryOutcome, type RegistrationForSend, type WakeSender } from '../src/transports/types.js';
import {
  budgeted,
  snapshotOf,
  hasWork,
  wakeVerdict,
  type WakeHolds,
  type DeviceSnapshot,
  type HeldBack,
  type Intervals,
  type WakePolicy,
} from '../domain/wake-policy.js';
import { fcmWakesHeldBack, messageToWake, prunes, rateLimitBackoffs, wakes } from './metrics.js';
import {
  repeatedlyUndrainedAfter,
  transportNameSchema,
  type BackoffHold,
  type DeferralHold,
  type TransportName,
  type WakePriority,
} from '../domain/vocabulary.js';
import { errorSummary } from '../src/observability/error-summary.js';
import { backoffBaseMs, maxConsecutiveFailures, misconfiguredMaxMs, misconfiguredOrigin, misconfiguredRetryMs } from '../domain/backoff.js';
import { traceClaim, traceProviderCall, traceSend, type ClaimAnswer, type MessageTraces } from './message-traces.js';

export interface RegistrationActivityDeps {
  readonly pool: DatabasePool;
  readonly log: Logger;
  readonly policy: WakePolicy;
  readonly transports: WakeSender;
  /** With tracing on: where a wake's spans join its message's trace (message-traces.ts). */
  readonly messageTraces?: MessageTraces;
}

export interface ClaimInput {
  readonly userId: string;
  readonly deviceId: string;
  /** Workflow time (ms). Every coalescing decision uses the workflow's clock, never the database's. */
  readonly now: number;
  /**
   * When the last claim's wake really went out, if long after the claim (a send retried while
   * our configuration was broken): the interval and the re-wake count from it, not from the
   * claim's `last_woken_at`.
   */
  readonly wokenAt?: number;
}

export type ClaimResult =
  | { readonly status: 'gone' }
  | {
      readonly status: 'claimed';
      readonly registrationId: string;
      readonly priority: WakePriority;
      readonly transport: TransportName;
      readonly intervals: Intervals;
      readonly control?: WakeHolds;
      /** The wake escalates an outstanding normal wake (a DM arrived behind it). */
      readonly escalation?: true;
      /**
       * The first message (its event's created_at, ms) that no earlier wake was for, among the
       * rows of this wake's priority; absent for a re-wake. For the message → wake metric.
       */
      readonly messageAt?: number;
    }
  | {
      readonly status: 'not-claimed';
      readonly registrationId: string;
      /**
       * What a wake sent now would carry: with a wake outstanding, the priority it was claimed
       * with — for a claim the workflow has to send again (see the workflow).
       */
      readonly priority: WakePriority;
      readonly transport: TransportName;
      readonly intervals: Intervals;
      readonly observed: { readonly outstanding: boolean; readonly hasPending: boolean; readonly lastWokenAt: number | null };
      /** With rows pending: the earliest time this claim could succeed (interval, re-wake, escalation, back-off, budget). */
      readonly readyAt?: number | null;
      /** Why a wake that was otherwise due was not claimed. */
      readonly heldBack?: HeldBack;
      readonly control?: WakeHolds;
    };

export interface SendInput {
  readonly registrationId: string;
  /** For logs only. */
  readonly userId: string;
  readonly deviceId: string;
  readonly priority: WakePriority;
  /** Workflow time (ms) of the send: back-offs are set on the workflow's clock, as claims read them. */
  readonly now?: number;
  /** The claim's `messageAt`: a delivery observes the message → wake latency from it. */
  readonly messageAt?: number;
}

/**
 * The wake's `DeliveryOutcome` (src/transports/types.ts) as the activity recorded it, plus
 * `gone`: the registration was deleted (or re-registered with another token) meanwhile. A
 * `misconfigured` or `deferred` wake released its claim with a back-off: the claim refuses
 * until `until` (workflow time, ms). A failing send whose origin is in outage is recorded as
 * cause `outage`.
 */
export type SendResult =
  | { readonly kind: 'delivered' }
  | { readonly kind: 'dead'; readonly reason: string }
  | { readonly kind: 'misconfigured'; readonly reason: string; readonly until: number }
  | { readonly kind: 'deferred'; readonly cause: DeferralHold; readonly reason: string; readonly until: number }
  | { readonly kind: 'gone' };

/** A look of a run begun unmarked: its claim, and the send of the wake it claimed. */
export interface ClaimAndSendResult {
  readonly claim: ClaimResult;
  /** Present when the claim was `claimed`: the wake was sent in the same activity. */
  readonly sent?: SendResult;
}

const claimRow = z.object({
  id: z.string(),
  transport: transportNameSchema,
  wake_outstanding: z.boolean(),
  last_woken_at: z.date().nullable(),
  last_wake_priority: z.enum(['normal', 'high']).nullable(),
  backoff_until: z.date().nullable(),
  backoff_reason: z.string().nullable(),
  fcm_budget_tat: z.date().nullable(),
  has_pending: z.boolean(),
  dm_pending: z.boolean(),
  first_new_at: z.date().nullable(),
  first_new_dm_at: z.date().nullable(),
  test_wake_pending: z.boolean(),
  claimed: z.boolean(),
  /** The priority the claim recorded: what its wake must be sent with, on a retry too. */
  claimed_priority: z.enum(['normal', 'high']).nullable(),
});

const sendRow = z.object({
  id: z.string(),
  transport: transportNameSchema,
  token: z.string(),
  up_p256dh: z.instanceof(Buffer).nullable(),
  up_auth: z.instanceof(Buffer).nullable(),
  backoff_count: z.number(),
});

export function createRegistrationActivities(deps: RegistrationActivityDeps) {
  const { pool, log, policy } = deps;
  const { minIntervalMs, rewakeAfterMs, fcmBudget } = policy;
  const intervals: Intervals = { minIntervalMs, rewakeAfterMs };
  const configErrorLogged = new Map<string, number>();

  /**
   * The wake policy (domain/wake-policy.ts) decided in SQL, under the registration's row
   * lock, so that two replicas can never both claim and never overspend the budget. Two
   * statements in one short transaction: the first locks the registration row, waiting for a
   * drain in flight to commit; the second — a new snapshot under READ COMMITTED — reads the
   * pending rows as that drain left them and makes the conditional UPDATE. (In one statement, a
   * claim that waited for the drain's row lock would re-check only the registration row against
   * its old snapshot of push_pending, and could claim with nothing pending.)
   *
   * The UPDATE claims when rows are pending (or a test wake is) and either this is a retry of
   * this very claim (same workflow time: it matches its own write, so a lost activity result
   * never turns into a second wake), or the policy allows a wake now. It records the wake's priority and spends
   * the FCM budget in the same UPDATE. The SQL is held equal to `wakeVerdict` by
   * test/integration/wake-policy-sql.test.ts; what a refused claim reports (when it could
   * succeed, and why not now) comes from `wakeVerdict` itself.
   */
  async function claimWake(input: ClaimInput): Promise<ClaimResult> {
    const startedAt = Date.now();
    const result = await claimWakeUntraced(input);
    await traceClaim(deps.messageTraces, claimAnswer(result), startedAt);
    return result;
  }

  async function claimWakeUntraced(input: ClaimInput): Promise<ClaimResult> {
    const now = new Date(input.now).toISOString();
    const wokenAt = input.wokenAt === undefined ? null : new Date(input.wokenAt).toISOString();
    const row = await pool.transaction(async (tx) => {
      const id = await tx.maybeOneFirst(sql.type(z.object({ id: z.string() }))`
        SELECT id FROM push_registrations WHERE user_id = ${input.userId} AND device_id = ${input.deviceId}
        FOR NO KEY UPDATE`);
      if (id === null) return null;
      return tx.one(sql.type(claimRow)`
        WITH current AS (
          SELECT r.id, r.transport, r.wake_outstanding, r.last_woken_at, r.last_wake_priority, r.backoff_until, r.backoff_reason,
                 r.fcm_budget_tat, pending.has_pending, pending.dm_pending, pending.first_new_at, pending.first_new_dm_at,
                 r.test_wake_pending, (r.transport = 'fcm' AND ${fcmBudget.burst} > 0) AS budgeted
          FROM push_registrations r
          CROSS JOIN LATERAL (
            SELECT count(*) > 0 AS has_pending, coalesce(bool_or(p.is_dm), false) AS dm_pending,
                   min(p.first_at) FILTER (WHERE r.last_woken_at IS NULL OR p.first_at > r.last_woken_at) AS first_new_at,
                   min(p.first_at) FILTER (WHERE p.is_dm AND (r.last_woken_at IS NULL OR p.first_at > r.last_woken_at)) AS first_new_dm_at
            FROM push_pending p WHERE p.registration_id = r.id
          ) pending
          WHERE r.id = ${id}
        ), woken AS (
          SELECT c.*, greatest(c.last_woken_at, ${wokenAt}::timestamptz) AS woken_at,
                 (c.wake_outstanding AND c.last_wake_priority = 'normal' AND c.dm_pending) AS escalation
          FROM current c
        ), decided AS (
          SELECT c.*,
                 (c.wake_outstanding AND coalesce(c.last_woken_at = ${now}::timestamptz, false)) AS retry,
                 (c.woken_at IS NULL OR c.woken_at <= ${now}::timestamptz - ${minIntervalMs} * interval '1 millisecond') AS interval_over,
                 (NOT c.wake_outstanding OR c.escalation OR c.test_wake_pending OR c.woken_at IS NULL
                   OR c.woken_at <= ${now}::timestamptz - ${rewakeAfterMs} * interval '1 millisecond') AS coalescing_allows,
                 (c.backoff_until IS NULL OR c.backoff_until <= ${now}::timestamptz) AS backoff_over,
                 greatest(coalesce(c.fcm_budget_tat, ${now}::timestamptz), ${now}::timestamptz) + ${fcmBudget.refillMs} * interval '1 millisecond' AS spent_tat
          FROM woken c
        ), judged AS (
          SELECT d.*,
                 (NOT d.budgeted OR d.spent_tat - ${now}::timestamptz
                   <= (${fcmBudget.burst} - CASE WHEN d.dm_pending OR d.test_wake_pending THEN 0 ELSE ${fcmBudget.dmReserve} END) * ${fcmBudget.refillMs} * interval '1 millisecond') AS budget_ok
          FROM decided d
        ), claimed AS (
          UPDATE push_registrations r
          SET wake_outstanding = true,
              last_woken_at = ${now}::timestamptz,
              last_wake_priority = CASE WHEN j.retry THEN r.last_wake_priority WHEN j.dm_pending OR j.test_wake_pending THEN 'high' ELSE 'normal' END,
              fcm_budget_tat = CASE WHEN j.budgeted AND NOT j.retry THEN j.spent_tat ELSE r.fcm_budget_tat END
          FROM judged j
          WHERE r.id = j.id AND (j.has_pending OR j.test_wake_pending)
            AND (j.retry OR (j.interval_over AND j.coalescing_allows AND j.backoff_over AND j.budget_ok))
          RETURNING r.id, r.fcm_budget_tat, r.last_wake_priority AS claimed_priority
        )
        SELECT j.id, j.transport, j.wake_outstanding, j.last_woken_at, j.last_wake_priority, j.backoff_until, j.backoff_reason,
               coalesce(claimed.fcm_budget_tat, j.fcm_budget_tat) AS fcm_budget_tat,
               j.has_pending, j.dm_pending, j.first_new_at, j.first_new_dm_at, j.test_wake_pending,
               claimed.id IS NOT NULL AS claimed, claimed.claimed_priority
        FROM judged j LEFT JOIN claimed ON claimed.id = j.id`);
    });
    if (row === null) return { status: 'gone' };
    const snapshot = snapshotForClaim(row, input.wokenAt);
    const verdict = wakeVerdict(policy, snapshot, input.now);
    const control = wakeHoldsOf(row, input.now);
    const common = {
      registrationId: row.id,
      transport: row.transport,
      intervals,
      ...(control === undefined ? {} : { control }),
    };
    if (row.claimed) {
      // What the claim recorded, not what the rows would give now: a retried claim (a DM arrived
      // between the attempts) sends the wake it recorded, and the next look escalates it once.
      const priority = row.claimed_priority ?? verdict.priority;
      const messageAt = (priority === 'high' ? row.first_new_dm_at : row.first_new_at)?.getTime();
      return {
        status: 'claimed',
        ...common,
        priority,
        ...(verdict.escalation && priority === 'high' ? { escalation: true } : {}),
        ...(messageAt === undefined ? {} : { messageAt }),
      };
    }
    if (verdict.heldBack === 'budget') fcmWakesHeldBack.inc({ priority: verdict.priority });
    return {
      status: 'not-claimed',
      ...common,
      // An outstanding wake is sent again (a claim whose task was lost) with the priority it was claimed with.
      priority: row.wake_outstanding ? (row.last_wake_priority ?? 'high') : verdict.priority,
      observed: { outstanding: row.wake_outstanding, hasPending: hasWork(snapshot), lastWokenAt: row.last_woken_at?.getTime() ?? null },
      readyAt: verdict.readyAt,
      ...(verdict.heldBack === undefined ? {} : { heldBack: verdict.heldBack }),
    };
  }

  /** The claim's row as the wake policy reads it (before its own UPDATE). */
  function snapshotForClaim(row: z.infer<typeof claimRow>, wokenAt: number | undefined): DeviceSnapshot {
    const snapshot = snapshotOf(row);
    // As SQL's greatest(): the later of the two times, ignoring a missing one.
    const times = [snapshot.lastWokenAt ?? undefined, wokenAt].filter((t): t is number => t !== undefined);
    return { ...snapshot, lastWokenAt: times.length === 0 ? null : Math.max(...times) };
  }

  function wakeHoldsOf(row: z.infer<typeof claimRow>, now: number): WakeHolds | undefined {
    const isBudgeted = budgeted(policy, row.transport);
    const budget = isBudgeted ? { budget: { ...fcmBudget, tat: row.fcm_budget_tat?.getTime() ?? null } } : {};
    const until = row.backoff_until?.getTime();
    const backoff = until !== undefined && until > now ? { backoff: { until, reason: row.backoff_reason } } : {};
    return isBudgeted || until !== undefined ? { ...budget, ...backoff } : undefined;
  }

  /**
   * An unexpected error (a database failure, say) is retried by Temporal, but its message and
   * cause never reach the history: a query error carries its bound values, and here those
   * include the push token. The send itself never throws: src/transports/instrumented-sender.ts is the one net
   * under a transport, and this activity counts each wake once (`wakes`).
   */
  async function sendWake(input: SendInput): Promise<SendResult> {
    return traceSend(deps.messageTraces, input.registrationId, () => sendWakeGuarded(input));
  }

  /**
   * The claim, and when it claims, the send of its wake with the claim's priority, at the same
   * workflow time: one local activity instead of two, so a wake costs its run one marker and
   * the worker one activation fewer. A retried attempt repeats the claim with the same `now`,
   * which matches its own write and claims again: its wake is sent again, as a retried
   * `sendWake` would (the provider collapses the two).
   */
  async function claimAndSendWake(input: ClaimInput): Promise<ClaimAndSendResult> {
    const claim = await claimWake(input);
    if (claim.status !== 'claimed') return { claim };
    const { registrationId, priority, messageAt } = claim;
    const { userId, deviceId, now } = input;
    const sent = await sendWake({ registrationId, userId, deviceId, priority, now, ...(messageAt === undefined ? {} : { messageAt }) });
    return { claim, sent };
  }

  async function sendWakeGuarded(input: SendInput): Promise<SendResult> {
    try {
      return await sendWakeUnguarded(input);
    } catch (error) {
      if (error instanceof ApplicationFailure || error instanceof CancelledFailure) throw error;
      log.warn({ registrationId: input.registrationId, err: errorSummary(error) }, 'send activity failed unexpectedly');
      throw ApplicationFailure.create({
        type: 'SendActivityError',
        message: `send failed: ${error instanceof Error ? error.name : 'unknown error'}`,
      });
    }
  }

  async function sendWakeUnguarded(input: SendInput): Promise<SendResult> {
    const now = input.now ?? Date.now();
    const row = await pool.maybeOne(sql.type(sendRow)`
      SELECT id, transport, token, up_p256dh, up_auth, backoff_count FROM push_registrations WHERE id = ${input.registrationId}`);
    if (row === null) return { kind: 'gone' };
    const registration: RegistrationForSend = {
      id: row.id,
      userId: input.userId,
      transport: row.transport,
      token: row.token,
      p256dh: row.up_p256dh,
      auth: row.up_auth,
    };
    const signal = cancellationSignal();
    const outcome = await traceProviderCall(registration.transport, input.priority, () =>
      deps.transports.send(registration, input.priority, now, signal),
    );
    // Cancelled (its attempt timed out, the worker shuts down): Temporal runs the next attempt
    // or none; this one writes nothing, so that two attempts never record at once.
    if (outcome.kind === 'cancelled' || signal?.aborted === true) throw new CancelledFailure('send cancelled: nothing recorded');
    const cause = outcome.kind === 'deferred' ? recordedCause(outcome) : '';
    wakes.inc({ transport: registration.transport, priority: input.priority, outcome: outcome.kind, cause });
    const ids = { registrationId: row.id, userId: input.userId, deviceId: input.deviceId, transport: row.transport };
    switch (outcome.kind) {
      case 'delivered':
        // The wake is out: nothing after this point may fail the activity, or Temporal would
        // retry it and send the wake a second time.
        if (input.messageAt !== undefined) messageToWake.observe({ priority: input.priority }, Math.max(0, Date.now() - input.messageAt) / 1000);
        await recordDelivery(registration, ids, providerAnswer(registration.transport, outcome));
        return { kind: 'delivered' };
      case 'dead':
        await deleteIfUnchanged(registration);
        prunes.inc({ reason: 'dead_token' });
        log.info({ ...ids, reason: outcome.reason }, 'registration pruned: the transport says the token is dead');
        return { kind: 'dead', reason: outcome.reason };
      case 'misconfigured': {
        const held = await misconfigured(registration, ids, outcome.reason, row.backoff_count, now);
        if (outcome.noToken === true && held.kind === 'misconfigured') deps.transports.credentialHoldRecorded?.(registration.transport);
        return held;
      }
      case 'deferred':
        return deferWake(registration, ids, deferralOf(outcome, row.backoff_count, rewakeAfterMs, now), now);
    }
  }

  /**
   * A wake that did not go through: in one UPDATE guarded by the unchanged token, release the
   * claim (no wake outstanding), set the back-off every path respects (the claim refuses before
   * `backoff_until`) with its cause and origin, count the failure when it is the endpoint's own,
   * and give back the FCM budget the claim spent (FCM did not take the wake). The tenth counted
   * failure prunes.
   */
  async function deferWake(registration: RegistrationForSend, ids: Record<string, string>, deferral: Deferral, now: number): Promise<SendResult> {
    const until = now + deferral.delayMs;
    const failures = await pool.maybeOneFirst(sql.type(z.object({ failures: z.number() }))`
      UPDATE push_registrations SET
        wake_outstanding = false,
        backoff_until = ${new Date(until).toISOString()}::timestamptz,
        backoff_count = backoff_count + 1,
        backoff_reason = ${deferral.reason},
        backoff_cause = ${deferral.cause},
        backoff_origin = ${deferral.origin ?? null},
        failures = failures + ${deferral.counts ? 1 : 0},
        last_send_answer = ${deferral.reason},
        last_send_at = now(),
        fcm_budget_tat = CASE WHEN transport = 'fcm' AND ${fcmBudget.burst > 0} THEN fcm_budget_tat - ${fcmBudget.refillMs} * interval '1 millisecond'
                              ELSE fcm_budget_tat END
      WHERE id = ${registration.id} AND token = ${registration.token}
      RETURNING failures`);
    if (failures === null) return { kind: 'gone' };
    if (deferral.cause === 'rate_limited') rateLimitBackoffs.inc({ transport: registration.transport });
    if (failures >= maxConsecutiveFailures) {
      await deleteIfUnchanged(registration);
      prunes.inc({ reason: 'failing' });
      log.info({ ...ids, failures, reason: deferral.reason }, 'registration pruned: too many consecutive failures of its endpoint');
      return { kind: 'dead', reason: `${failures} consecutive failures of the endpoint (last: ${deferral.reason})` };
    }
    if (deferral.cause === 'misconfigured') return { kind: 'misconfigured', reason: deferral.reason, until };
    const level = deferral.cause === 'outage' ? 'debug' : 'info';
    log[level](
      { ...ids, cause: deferral.cause, counted: deferral.counts, failures, reason: deferral.reason, until: new Date(until).toISOString() },
      'wake not delivered; backing off',
    );
    return { kind: 'deferred', cause: deferral.cause, reason: deferral.reason, until };
  }

  /**
   * Our configuration is wrong (FCM disabled or refused, the prune breaker open): never the
   * device's fault, never counted against it, and never silently consumed. The wake is
   * deferred like any other (the claim released, a back-off of cause `misconfigured` whose
   * origin the worker that is fixed ends at start), and an alert line says so: one per reason
   * and minute at most (the metric counts every one).
   */
  async function misconfigured(
    registration: RegistrationForSend,
    ids: Record<string, string>,
    reason: string,
    backoffCount: number,
    now: number,
  ): Promise<SendResult> {
    const last = configErrorLogged.get(reason) ?? -Infinity;
    if (Date.now() - last >= 60_000) {
      configErrorLogged.set(reason, Date.now());
      log.error(
        { ...ids, alert: 'transport-misconfigured', reason },
        'wake not sent: configuration problem on our side (held back until it is fixed)',
      );
    }
    const delayMs = Math.min(misconfiguredMaxMs, misconfiguredRetryMs * 2 ** Math.min(backoffCount, 20));
    const origin = misconfiguredOrigin(registration.transport);
    return deferWake(registration, ids, { reason, cause: 'misconfigured', delayMs, counts: false, origin }, now);
  }

  /**
   * After a delivery: when it went out (the device's `last_woken_at`), the provider's answer, one
   * more wake since the last drain — unless the device drained since the claim (the drain cleared
   * `wake_outstanding`: the phone took this wake already) — a test wake no longer pending, and
   * failures and back-off start again. Best effort: the next delivery records anew.
   */
  async function recordDelivery(registration: RegistrationForSend, ids: Record<string, string>, answer: string): Promise<void> {
    try {
      await pool.query(sql.unsafe`
        UPDATE push_registrations SET
          last_delivered_at = now(),
          wakes_since_drain = wakes_since_drain + CASE WHEN wake_outstanding THEN 1 ELSE 0 END,
          repeatedly_undrained = wakes_since_drain + CASE WHEN wake_outstanding THEN 1 ELSE 0 END >= ${repeatedlyUndrainedAfter},
          test_wake_pending = false,
          last_send_answer = ${answer}, last_send_at = now(),
          failures = 0, backoff_count = 0, backoff_until = NULL, backoff_reason = NULL, backoff_origin = NULL
        WHERE id = ${registration.id} AND token = ${registration.token}`);
    } catch (error) {
      log.warn({ ...ids, err: errorSummary(error) }, 'wake delivered; could not record it (the next delivery will)');
    }
  }

  /** Deletes the registration unless it was re-registered with another token meanwhile. */
  async function deleteIfUnchanged(registration: RegistrationForSend): Promise<void> {
    await pool.query(sql.unsafe`DELETE FROM push_registrations WHERE id = ${registration.id} AND token = ${registration.token}`);
  }

  return { claimWake, sendWake, claimAndSendWake };
}

/** What a claim's span says of it (message-traces.ts). */
function claimAnswer(result: ClaimResult): ClaimAnswer {
  if (result.status === 'gone') return { status: 'gone' };
  const heldBack = result.status === 'not-claimed' ? result.heldBack : undefined;
  return {
    status: result.status,
    registrationId: result.registrationId,
    priority: result.priority,
    transport: result.transport,
    ...(heldBack === undefined ? {} : { heldBack }),
  };
}

/** A wake that did not go through, as `deferWake` records it. */
interface Deferral {
  readonly reason: string;
  /** What the device is told holds its wakes back. */
  readonly cause: BackoffHold;
  readonly delayMs: number;
  /** The failure counts toward the ten that prune. */
  readonly counts: boolean;
  /** The origin whose recovery ends the back-off early (an outage, our configuration). */
  readonly origin?: string;
}

type Deferred = Extract<DeliveryOutcome, { kind: 'deferred' }>;

/** The cause a deferred wake is recorded with: a failing send whose origin is in outage is the outage's. */
function recordedCause(outcome: Deferred): DeferralHold {
  return outcome.origin !== undefined ? 'outage' : outcome.cause;
}

/** How a deferred wake is recorded. */
function deferralOf(outcome: Deferred, backoffCount: number, capMs: number, now: number): Deferral {
  return {
    reason: outcome.reason,
    cause: recordedCause(outcome),
    delayMs: backoffDelayMs(outcome, backoffCount, capMs, now),
    counts: outcome.counts,
    ...(outcome.origin === undefined ? {} : { origin: outcome.origin }),
  };
}

/** The running activity's cancellation (a time-out of its attempt included); none outside an activity. */
function cancellationSignal(): AbortSignal | undefined {
  try {
    return Context.current().cancellationSignal;
  } catch {
    return undefined; // called directly (tests, tools)
  }
}

/**
 * The wait before the next attempt (see `backoffBaseMs`, by the provider's cause: a failing
 * send in an outage grows as a failing one). The provider's `until` is honoured exactly for a
 * rate limit, as a floor otherwise.
 */
export function backoffDelayMs(outcome: Pick<Deferred, 'cause' | 'until'>, backoffCount: number, capMs: number, now: number): number {
  const asked = outcome.until === undefined ? undefined : Math.max(0, outcome.until - now);
  if (outcome.cause === 'rate_limited' && asked !== undefined) return asked;
  const growing = Math.min(capMs, backoffBaseMs[outcome.cause] * 2 ** Math.min(backoffCount, 20));
  return Math.max(asked ?? 0, growing);
}

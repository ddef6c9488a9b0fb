/**
 * What an operator may see of one device: its registration without secrets (transport,
 * whether encrypted, times, failures, wake state, the FCM wake budget left and any back-off in
 * force; the last wake its provider accepted and the provider's last answer, the last drain and
 * the wakes since, whether its HIGH wakes arrive lowered), its pending rows, whether it still has a live session, and its workflow (status and
 * the `state` query). Never the token, the endpoint or the keys: the SELECTs below do not even
 * read them.
 */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { sql } from 'slonik';
import { z } from 'zod';
import type { DatabasePool } from '../db/pool.js';
import { budgeted, budgetLeft, snapshotOf, wakeVerdict, type WakePolicy, type WakeVerdict } from '../../domain/wake-policy.js';
import { registrationWorkflowId } from '../../temporal/names.js';
import { stateQuery } from '../../temporal/registration-messages.js';
import type { RegistrationStateView } from '../../domain/registration-state.js';
import { transportNameSchema } from '../../domain/vocabulary.js';

const registrationRow = z.object({
  id: z.string(),
  transport: transportNameSchema,
  encrypted: z.boolean(),
  wake_outstanding: z.boolean(),
  last_woken_at: z.date().nullable(),
  last_wake_priority: z.enum(['normal', 'high']).nullable(),
  failures: z.number(),
  created_at: z.date(),
  updated_at: z.date(),
  fcm_budget_tat: z.date().nullable(),
  backoff_until: z.date().nullable(),
  backoff_reason: z.string().nullable(),
  backoff_count: z.number(),
  test_wake_pending: z.boolean(),
  // What reached the provider, and what the phone made of it.
  last_delivered_at: z.date().nullable(),
  last_send_answer: z.string().nullable(),
  last_send_at: z.date().nullable(),
  last_drained_at: z.date().nullable(),
  wakes_since_drain: z.number(),
  priority_lowered: z.boolean(),
  priority_lowered_wakes: z.number(),
});

const pendingRow = z.object({
  channel_id: z.string(),
  is_dm: z.boolean(),
  message_count: z.number(),
  first_message_id: z.string(),
  last_message_id: z.string(),
  first_at: z.date(),
  last_at: z.date(),
});

export type RegistrationSummary = z.infer<typeof registrationRow>;
export type PendingSummary = z.infer<typeof pendingRow>;

export interface WorkflowSummary {
  readonly workflowId: string;
  /** RUNNING, COMPLETED, TERMINATED…; `not found` when Temporal has no such workflow. */
  readonly status: string;
  readonly runId: string | undefined;
  readonly startTime: Date | undefined;
  /** The live coalescing state (query `state`), when running and answering. */
  readonly state: RegistrationStateView | undefined;
  /** Why the state is missing (no worker answering, Temporal unreachable…). */
  readonly stateError: string | undefined;
  readonly webUiUrl: string | undefined;
}

/** When the device may be woken, by the wake policy (as this tool's configuration states it). */
export interface DeliverySummary {
  /** The wake policy's verdict now: due, or from when (and why not sooner). */
  readonly next: WakeVerdict;
  /** FCM with a budget: wakes that could go out back to back now. */
  readonly budget: {
    readonly burst: number;
    readonly left: number;
    readonly leftForServerChannels: number;
    readonly refillMs: number;
    readonly dmReserve: number;
  } | null;
  /** A back-off in force now: no wake before `until`. */
  readonly backoff: { readonly until: Date; readonly reason: string | null; readonly inARow: number } | null;
}

export interface DeviceReport {
  readonly userId: string;
  readonly deviceId: string;
  readonly registration: RegistrationSummary | null;
  readonly delivery: DeliverySummary | null;
  readonly pending: readonly PendingSummary[];
  /** Unrevoked, unexpired refresh_tokens rows: none ⇒ maintenance prunes the registration. */
  readonly liveSessions: number;
  readonly workflow: WorkflowSummary;
}

export interface OperationsDeps {
  readonly pool: DatabasePool;
  readonly temporal: Client;
  readonly namespace: string;
  readonly uiUrl: string | undefined;
  /** The wake policy the workers run with (the tool's own PUSH_* variables). */
  readonly policy: WakePolicy;
  /** Deadline of each Temporal call. */
  readonly temporalDeadlineMs?: number;
}

export async function inspectDevice(deps: OperationsDeps, userId: string, deviceId: string): Promise<DeviceReport> {
  const registration = await deps.pool.maybeOne(sql.type(registrationRow)`
    SELECT id, transport, up_p256dh IS NOT NULL AS encrypted, wake_outstanding, last_woken_at, last_wake_priority, failures, created_at, updated_at,
           fcm_budget_tat, backoff_until, backoff_reason, backoff_count, test_wake_pending,
           last_delivered_at, last_send_answer, last_send_at, last_drained_at, wakes_since_drain, priority_lowered, priority_lowered_wakes
    FROM push_registrations WHERE user_id = ${userId} AND device_id = ${deviceId}`);
  const pending =
    registration === null
      ? []
      : await deps.pool.any(sql.type(pendingRow)`
          SELECT channel_id, is_dm, message_count, first_message_id, last_message_id, first_at, last_at
          FROM push_pending WHERE registration_id = ${registration.id} ORDER BY is_dm DESC, first_at`);
  const liveSessions = await deps.pool.oneFirst(sql.type(z.object({ count: z.number() }))`
    SELECT count(*)::int AS count FROM refresh_tokens
    WHERE user_id = ${userId} AND device_id = ${deviceId} AND revoked_at IS NULL AND expires_at > now()`);
  const delivery = registration === null ? null : deliverySummary(registration, pending, deps.policy, Date.now());
  return { userId, deviceId, registration, delivery, pending, liveSessions, workflow: await describeWorkflow(deps, userId, deviceId) };
}

export function deliverySummary(
  registration: RegistrationSummary,
  pending: readonly Pick<PendingSummary, 'is_dm'>[],
  policy: WakePolicy,
  now: number,
): DeliverySummary {
  const snapshot = snapshotOf({ ...registration, has_pending: pending.length > 0, dm_pending: pending.some((row) => row.is_dm) });
  const budget = policy.fcmBudget;
  const until = registration.backoff_until;
  return {
    next: wakeVerdict(policy, snapshot, now),
    budget: !budgeted(policy, snapshot.transport)
      ? null
      : {
          burst: budget.burst,
          left: budgetLeft(budget, snapshot.budgetTat, now, 'high'),
          leftForServerChannels: budgetLeft(budget, snapshot.budgetTat, now, 'normal'),
          refillMs: budget.refillMs,
          dmReserve: budget.dmReserve,
        },
    backoff: until === null || until.getTime() <= now ? null : { until, reason: registration.backoff_reason, inARow: registration.backoff_count },
  };
}

export function webUiLink(uiUrl: string | undefined, namespace: string, workflowId: string): string | undefined {
  if (uiUrl === undefined) return undefined;
  return `${uiUrl.replace(/\/+$/, '')}/namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(workflowId)}`;
}

async function describeWorkflow(deps: OperationsDeps, userId: string, deviceId: string): Promise<WorkflowSummary> {
  const workflowId = registrationWorkflowId(userId, deviceId);
  const base = { workflowId, webUiUrl: webUiLink(deps.uiUrl, deps.namespace, workflowId) };
  const handle = deps.temporal.workflow.getHandle(workflowId);
  const deadline = deps.temporalDeadlineMs ?? 5_000;
  try {
    const description = await withDeadline(handle.describe(), deadline, 'describe');
    const running = description.status.name === 'RUNNING';
    const state = running
      ? await withDeadline(handle.query(stateQuery), deadline, 'the state query').then(
          (s) => ({ s }),
          (e: unknown) => ({ e }),
        )
      : undefined;
    return {
      ...base,
      status: description.status.name,
      runId: description.runId,
      startTime: description.startTime,
      state: state !== undefined && 's' in state ? state.s : undefined,
      stateError: state === undefined ? 'not running' : 'e' in state ? errorText(state.e) : undefined,
    };
  } catch (error) {
    const status = error instanceof WorkflowNotFoundError ? 'not found' : 'unknown';
    return {
      ...base,
      status,
      runId: undefined,
      startTime: undefined,
      state: undefined,
      stateError: status === 'unknown' ? errorText(error) : 'no workflow',
    };
  }
}

function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms (is a worker running?)`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

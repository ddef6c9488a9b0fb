/**
 * The registration workflow's two activities. They take ids and load everything secret
 * themselves, so a workflow history never holds a token, an endpoint or a key.
 *
 * claimWake — one conditional UPDATE … RETURNING decides whether this device gets a wake now.
 * sendWake  — loads the registration, sends through its transport, records the outcome.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { sql } from 'slonik';
import { z } from 'zod';
import type { Coalescing } from '../src/config/index.js';
import type { DatabasePool } from '../src/db/pool.js';
import type { Logger } from '../src/log.js';
import type { Priority, RegistrationForSend, Transport, TransportName } from '../src/transports/types.js';
import { prunes, wakes } from './metrics.js';

/** Consecutive transient failures after which a registration is pruned (design §2). */
export const maxConsecutiveFailures = 10;

export interface RegistrationActivityDeps {
  readonly pool: DatabasePool;
  readonly log: Logger;
  readonly coalescing: Coalescing;
  readonly transports: { forRegistration(registration: RegistrationForSend): Transport };
}

export interface ClaimInput {
  readonly userId: string;
  readonly deviceId: string;
  /** Workflow time (ms). Every coalescing decision uses the workflow's clock, never the database's. */
  readonly now: number;
}

export type ClaimResult =
  | { readonly status: 'gone' }
  | {
      readonly status: 'claimed';
      readonly registrationId: string;
      readonly priority: Priority;
      readonly transport: TransportName;
      readonly intervals: Coalescing;
    }
  | {
      readonly status: 'not-claimed';
      readonly registrationId: string;
      /** What a wake sent now would carry: for a claim the workflow has to send again (see the workflow). */
      readonly priority: Priority;
      readonly transport: TransportName;
      readonly intervals: Coalescing;
      readonly observed: { readonly outstanding: boolean; readonly hasPending: boolean; readonly lastWokenAt: number | null };
    };

export interface SendInput {
  readonly registrationId: string;
  /** For logs only. */
  readonly userId: string;
  readonly deviceId: string;
  readonly priority: Priority;
}

export type SendResult =
  | { readonly outcome: 'delivered' | 'gone' }
  | { readonly outcome: 'dead' | 'config-error'; readonly reason: string };

const claimRow = z.object({
  id: z.string(),
  transport: z.enum(['fcm', 'unifiedpush']),
  wake_outstanding: z.boolean(),
  last_woken_at: z.date().nullable(),
  has_pending: z.boolean(),
  dm_pending: z.boolean(),
  claimed: z.boolean(),
});

const sendRow = z.object({
  id: z.string(),
  transport: z.enum(['fcm', 'unifiedpush']),
  token: z.string(),
  up_p256dh: z.instanceof(Buffer).nullable(),
  up_auth: z.instanceof(Buffer).nullable(),
  failures: z.number(),
});

export function createRegistrationActivities(deps: RegistrationActivityDeps) {
  const { pool, log, coalescing } = deps;

  async function claimWake(input: ClaimInput): Promise<ClaimResult> {
    const now = new Date(input.now).toISOString();
    // One statement: the snapshot of the row (for the answer) and the conditional claim.
    // The claim takes the row lock, so of two concurrent claims at most one matches; a
    // retry of this same claim (same workflow time) matches its own earlier write and gets
    // the same answer, so a lost activity result never turns into a second wake.
    const row = await pool.maybeOne(sql.type(claimRow)`
      WITH current AS (
        SELECT r.id, r.transport, r.wake_outstanding, r.last_woken_at,
               EXISTS (SELECT 1 FROM push_pending p WHERE p.registration_id = r.id) AS has_pending,
               EXISTS (SELECT 1 FROM push_pending p WHERE p.registration_id = r.id AND p.is_dm) AS dm_pending
        FROM push_registrations r
        WHERE r.user_id = ${input.userId} AND r.device_id = ${input.deviceId}
      ), claimed AS (
        UPDATE push_registrations r
        SET wake_outstanding = true, last_woken_at = ${now}::timestamptz
        WHERE r.user_id = ${input.userId} AND r.device_id = ${input.deviceId}
          AND EXISTS (SELECT 1 FROM push_pending p WHERE p.registration_id = r.id)
          AND (
            (r.wake_outstanding AND r.last_woken_at = ${now}::timestamptz)
            OR (
              (r.last_woken_at IS NULL
                OR r.last_woken_at <= ${now}::timestamptz - ${coalescing.minIntervalMs} * interval '1 millisecond')
              AND (NOT r.wake_outstanding OR r.last_woken_at IS NULL
                OR r.last_woken_at <= ${now}::timestamptz - ${coalescing.rewakeAfterMs} * interval '1 millisecond')
            )
          )
        RETURNING r.id
      )
      SELECT current.id, current.transport, current.wake_outstanding, current.last_woken_at, current.has_pending, current.dm_pending,
             claimed.id IS NOT NULL AS claimed
      FROM current LEFT JOIN claimed ON claimed.id = current.id
    `);
    if (row === null) return { status: 'gone' };
    // Both parts of the statement read one snapshot: the DM rows the claim saw are these.
    const priority = row.dm_pending ? 'high' : 'normal';
    if (row.claimed) return { status: 'claimed', registrationId: row.id, priority, transport: row.transport, intervals: coalescing };
    return {
      status: 'not-claimed',
      registrationId: row.id,
      priority,
      transport: row.transport,
      intervals: coalescing,
      observed: { outstanding: row.wake_outstanding, hasPending: row.has_pending, lastWokenAt: row.last_woken_at?.getTime() ?? null },
    };
  }

  /**
   * An unexpected error (a database failure, say) is retried by Temporal like a transient one,
   * but its message and cause never reach the history: a query error carries its bound values,
   * and here those include the push token.
   */
  async function sendWake(input: SendInput): Promise<SendResult> {
    try {
      return await sendWakeUnguarded(input);
    } catch (error) {
      if (error instanceof ApplicationFailure) throw error;
      log.warn({ registrationId: input.registrationId, error: error instanceof Error ? error.name : 'unknown' }, 'send activity failed unexpectedly');
      throw ApplicationFailure.create({ type: 'SendActivityError', message: `send failed: ${error instanceof Error ? error.name : 'unknown error'}` });
    }
  }

  async function sendWakeUnguarded(input: SendInput): Promise<SendResult> {
    const row = await pool.maybeOne(sql.type(sendRow)`
      SELECT id, transport, token, up_p256dh, up_auth, failures FROM push_registrations WHERE id = ${input.registrationId}`);
    if (row === null) return { outcome: 'gone' };
    const registration: RegistrationForSend = { id: row.id, transport: row.transport, token: row.token, p256dh: row.up_p256dh, auth: row.up_auth };
    const outcome = await deps.transports.forRegistration(registration).send(registration, input.priority);
    wakes.inc({ transport: registration.transport, priority: input.priority, outcome: outcome.kind });
    const ids = { registrationId: row.id, userId: input.userId, deviceId: input.deviceId, transport: row.transport };
    switch (outcome.kind) {
      case 'delivered':
        // The wake is out: nothing after this point may fail the activity, or Temporal would
        // retry it and send the wake a second time (a PostgreSQL restart here did exactly that).
        if (row.failures > 0) await resetFailures(registration, ids);
        return { outcome: 'delivered' };
      case 'dead':
        await deleteIfUnchanged(registration);
        prunes.inc({ reason: 'dead_token' });
        log.info({ ...ids, reason: outcome.reason }, 'registration pruned: the transport says the token is dead');
        return { outcome: 'dead', reason: outcome.reason };
      case 'config-error':
        log.warn({ ...ids, reason: outcome.reason }, 'wake not sent: configuration problem on our side');
        return { outcome: 'config-error', reason: outcome.reason };
      case 'transient':
        return recordTransientFailure(registration, ids, outcome.reason, outcome.retryAfterMs);
    }
  }

  /** Counts the failure; the tenth in a row prunes, the others ask Temporal to retry. */
  async function recordTransientFailure(
    registration: RegistrationForSend,
    ids: Record<string, string>,
    reason: string,
    retryAfterMs: number | undefined,
  ): Promise<SendResult> {
    const failures = await pool.maybeOneFirst(sql.type(z.object({ failures: z.number() }))`
      UPDATE push_registrations SET failures = failures + 1
      WHERE id = ${registration.id} AND token = ${registration.token}
      RETURNING failures`);
    if (failures === null) return { outcome: 'gone' };
    if (failures >= maxConsecutiveFailures) {
      await deleteIfUnchanged(registration);
      prunes.inc({ reason: 'transient_failures' });
      log.info({ ...ids, failures, reason }, 'registration pruned: too many consecutive transient failures');
      return { outcome: 'dead', reason: `${failures} consecutive transient failures (last: ${reason})` };
    }
    log.info({ ...ids, failures, reason, retryAfterMs }, 'wake failed transiently; Temporal retries it');
    throw ApplicationFailure.create({
      type: 'TransientSendFailure',
      message: `transient send failure ${failures}/${maxConsecutiveFailures}: ${reason}`,
      nextRetryDelay: retryAfterMs,
    });
  }

  /** After a delivery: the failure count starts again. Best effort; a miss is reset by the next delivery. */
  async function resetFailures(registration: RegistrationForSend, ids: Record<string, string>): Promise<void> {
    try {
      await pool.query(sql.unsafe`UPDATE push_registrations SET failures = 0 WHERE id = ${registration.id} AND token = ${registration.token} AND failures <> 0`);
    } catch (error) {
      log.warn({ ...ids, error: error instanceof Error ? error.name : 'unknown' }, 'wake delivered; could not reset the failure count (the next delivery will)');
    }
  }

  /** Deletes the registration unless it was re-registered with another token meanwhile. */
  async function deleteIfUnchanged(registration: RegistrationForSend): Promise<void> {
    await pool.query(sql.unsafe`DELETE FROM push_registrations WHERE id = ${registration.id} AND token = ${registration.token}`);
  }

  return { claimWake, sendWake };
}

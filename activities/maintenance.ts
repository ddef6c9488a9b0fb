/**
 * The maintenance activities (design §2 "Pruning stale registrations"), each one bounded
 * batch: a short transaction that locks a few hundred rows at most, so a table of millions
 * never sees a long lock. `SKIP LOCKED` lets a second maintenance run (or a request touching
 * the same row) pass by instead of waiting. Every deleted registration's workflow is told to
 * check and end; every stranded one is signalled (with start) to wake.
 */
import type { Client } from '@temporalio/client';
import { sql } from 'slonik';
import { z } from 'zod';
import type { Coalescing } from '../src/config/index.js';
import type { DatabasePool } from '../src/db/pool.js';
import type { Logger } from '../src/log.js';
import { announceDeleted, announcePending, type Device } from '../temporal/registrations.js';
import { healed, pendingRowsPruned, processedEventsPruned, prunes } from './metrics.js';

export interface MaintenanceActivityDeps {
  readonly pool: DatabasePool;
  readonly log: Logger;
  readonly temporal: Client;
  readonly taskQueue: string;
  readonly coalescing: Coalescing;
}

/** How long counted-event ids are kept: the stream's max age (3 days) plus a day of margin. */
export const processedEventRetentionMs = 4 * 24 * 3_600_000;
export const staleRegistrationAfterDays = 90;
export const untouchedPendingAfterDays = 7;

export interface BatchInput {
  readonly batchSize: number;
  /** Keyset cursor for scans that cannot shrink their candidate set by deleting. */
  readonly afterId?: string;
}

export interface BatchResult {
  readonly affected: number;
  /** The scan's last id; absent when the scan is complete. */
  readonly nextAfterId?: string;
}

const deviceRow = z.object({ id: z.string(), user_id: z.string(), device_id: z.string() });
const healRow = deviceRow.extend({ transport: z.enum(['fcm', 'unifiedpush']) });

export function createMaintenanceActivities(deps: MaintenanceActivityDeps) {
  const { pool, log } = deps;

  /** Registrations without a live session (logout, password change, revocation, expiry…). */
  async function pruneWithoutSession(input: BatchInput): Promise<BatchResult> {
    const afterId = input.afterId ?? '0';
    // A window of ids is examined per batch (sessions cannot be indexed from our side), and
    // the cursor moves past it whether or not anything in it was deleted.
    const windowEnd = await pool.maybeOneFirst(sql.type(z.object({ id: z.string() }))`
      SELECT max(id)::int8 AS id FROM (
        SELECT id FROM push_registrations WHERE id > ${afterId} ORDER BY id LIMIT ${input.batchSize}
      ) w`);
    if (windowEnd === null) return { affected: 0 };
    const deleted = await pool.any(sql.type(deviceRow)`
      WITH doomed AS (
        SELECT r.id FROM push_registrations r
        WHERE r.id > ${afterId} AND r.id <= ${windowEnd}
          AND NOT EXISTS (
            SELECT 1 FROM refresh_tokens t
            WHERE t.user_id = r.user_id AND t.device_id = r.device_id
              AND t.revoked_at IS NULL AND t.expires_at > now())
        FOR UPDATE OF r SKIP LOCKED
      )
      DELETE FROM push_registrations r USING doomed WHERE r.id = doomed.id
      RETURNING r.id, r.user_id, r.device_id`);
    await endWorkflows(deleted, 'no_session');
    return { affected: deleted.length, nextAfterId: windowEnd };
  }

  /** Registrations the app has not re-registered for 90 days (it re-registers on every start). */
  async function pruneStale(input: BatchInput): Promise<BatchResult> {
    const deleted = await pool.any(sql.type(deviceRow)`
      WITH doomed AS (
        SELECT id FROM push_registrations
        WHERE updated_at < now() - ${staleRegistrationAfterDays} * interval '1 day'
        ORDER BY updated_at LIMIT ${input.batchSize}
        FOR UPDATE SKIP LOCKED
      )
      DELETE FROM push_registrations r USING doomed WHERE r.id = doomed.id
      RETURNING r.id, r.user_id, r.device_id`);
    await endWorkflows(deleted, 'not_reregistered_90d');
    return { affected: deleted.length };
  }

  /** Pending rows nobody touched for 7 days. */
  async function pruneUntouchedPending(input: BatchInput): Promise<BatchResult> {
    const deleted = await pool.oneFirst(sql.type(z.object({ count: z.number() }))`
      WITH doomed AS (
        SELECT registration_id, channel_id FROM push_pending
        WHERE last_at < now() - ${untouchedPendingAfterDays} * interval '1 day'
        LIMIT ${input.batchSize}
        FOR UPDATE SKIP LOCKED
      ), deleted AS (
        DELETE FROM push_pending p USING doomed
        WHERE p.registration_id = doomed.registration_id AND p.channel_id = doomed.channel_id
        RETURNING 1
      )
      SELECT count(*)::int AS count FROM deleted`);
    pendingRowsPruned.inc(deleted);
    return { affected: deleted };
  }

  /** Ids of counted message events, once the stream can no longer redeliver them. */
  async function pruneProcessedEvents(input: BatchInput): Promise<BatchResult> {
    const deleted = await pool.oneFirst(sql.type(z.object({ count: z.number() }))`
      WITH doomed AS (
        SELECT message_id FROM push_processed_events
        WHERE processed_at < now() - ${processedEventRetentionMs} * interval '1 millisecond'
        ORDER BY processed_at LIMIT ${input.batchSize}
        FOR UPDATE SKIP LOCKED
      ), deleted AS (
        DELETE FROM push_processed_events e USING doomed WHERE e.message_id = doomed.message_id RETURNING 1
      )
      SELECT count(*)::int AS count FROM deleted`);
    processedEventsPruned.inc(deleted);
    return { affected: deleted };
  }

  /**
   * Registrations with a message waiting longer than the re-wake interval and no wake for as
   * long: a lost signal or a wiped Temporal namespace. Signal-with-start wakes (or recreates)
   * their workflow, which claims in PostgreSQL as usual.
   */
  async function healStranded(input: BatchInput): Promise<BatchResult> {
    const rewake = deps.coalescing.rewakeAfterMs;
    const stranded = await pool.any(sql.type(healRow)`
      SELECT r.id, r.user_id, r.device_id, r.transport FROM push_registrations r
      WHERE r.id > ${input.afterId ?? '0'}
        AND (r.last_woken_at IS NULL OR r.last_woken_at < now() - ${rewake} * interval '1 millisecond')
        AND EXISTS (
          SELECT 1 FROM push_pending p
          WHERE p.registration_id = r.id AND p.first_at < now() - ${rewake} * interval '1 millisecond')
      ORDER BY r.id LIMIT ${input.batchSize}`);
    const failed = await forEachBounded(stranded, (row) => announcePending(deps.temporal, deps.taskQueue, device(row), row.transport));
    if (failed > 0) throw new Error(`could not signal ${failed} of ${stranded.length} stranded registrations`);
    healed.inc(stranded.length);
    if (stranded.length > 0) log.info({ count: stranded.length }, 'healed stranded registrations');
    const last = stranded.at(-1);
    return last === undefined || stranded.length < input.batchSize ? { affected: stranded.length } : { affected: stranded.length, nextAfterId: last.id };
  }

  async function endWorkflows(deleted: readonly z.infer<typeof deviceRow>[], reason: string): Promise<void> {
    if (deleted.length === 0) return;
    prunes.inc({ reason }, deleted.length);
    log.info({ count: deleted.length, reason }, 'registrations pruned');
    // The rows are gone whatever happens next; a workflow that misses its stop signal ends
    // at its next look at PostgreSQL, so a failed signal is logged, not retried.
    const failed = await forEachBounded(deleted, (row) => announceDeleted(deps.temporal, device(row)));
    if (failed > 0) log.warn({ failed, reason }, 'could not tell some pruned registrations\' workflows to end');
  }

  return { pruneWithoutSession, pruneStale, pruneUntouchedPending, pruneProcessedEvents, healStranded };
}

function device(row: { user_id: string; device_id: string }): Device {
  return { userId: row.user_id, deviceId: row.device_id };
}

/** Runs `work` over `items`, at most 16 at a time; returns how many failed. */
async function forEachBounded<T>(items: readonly T[], work: (item: T) => Promise<void>, concurrency = 16): Promise<number> {
  let next = 0;
  let failed = 0;
  const worker = async () => {
    while (next < items.length) await work(items[next++]!).catch(() => void failed++);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  return failed;
}

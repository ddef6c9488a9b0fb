/**
 * The maintenance activities (docs/design.md, Pruning; a workflow exists until its registration
 * is deleted). Each call does a bounded slice of work:
 *
 *   - rules that must look at every row (no live session, untouched pending rows, stranded
 *     devices) walk their table along its primary key in windows, keeping the position in
 *     PostgreSQL across calls and runs (maintenance-scan.ts), so they cover a table of any size;
 *   - rules whose candidates an index finds (not re-registered for 90 days, forgotten event
 *     ids) take the oldest candidates, batch after batch, until a batch comes back short;
 *   - Temporal is reconciled both ways, in pages: running registration workflows without a
 *     registration are told to end, registrations without a running workflow get one.
 *
 * Every statement is short and locks at most one window's doomed rows; `SKIP LOCKED` lets a
 * second maintenance run, or a request on the same row, pass by instead of waiting.
 */
import type { Client } from '@temporalio/client';
import { sql } from 'slonik';
import { z } from 'zod';
import type { WakePolicy } from '../domain/wake-policy.js';
import type { DatabasePool } from '../src/db/pool.js';
import type { Logger } from '../src/observability/log.js';
import { parseRegistrationWorkflowId, registrationWorkflowId } from '../temporal/names.js';
import { settleAll } from '../src/async/concurrency.js';
import { signalDeleted, signalPending, startIfMissing } from '../temporal/registration-workflows.js';
import { runSlice, type SliceInput, type SliceResult, type WindowResult } from './maintenance-scan.js';
import { healed, missingWorkflowsStarted, orphanWorkflowsEnded, pendingRowsPruned, processedEventsPruned, prunes } from './metrics.js';
import { listRunningRegistrations } from './workflow-list.js';
import { transportNameSchema } from '../domain/vocabulary.js';
import type { DeviceIdentity } from '../domain/vocabulary.js';
import { processedEventRetentionMs, staleRegistrationAfterDays, untouchedPendingAfterDays } from '../domain/retention.js';

export type { SliceInput, SliceResult } from './maintenance-scan.js';

export interface MaintenanceActivityDeps {
  readonly pool: DatabasePool;
  readonly log: Logger;
  readonly temporal: Client;
  readonly taskQueue: string;
  readonly policy: WakePolicy;
}

/** A window statement's answer: one row per hit, or one row of nulls when nothing hit. */
const windowRow = z.object({
  last: z.string().nullable(),
  scanned: z.number(),
  user_id: z.string().nullable(),
  device_id: z.string().nullable(),
});

export function createMaintenanceActivities(deps: MaintenanceActivityDeps) {
  const { pool, log } = deps;

  /**
   * Registrations without a live session (logout, password change, revocation, expiry…): no
   * unrevoked, unexpired refresh_tokens row for the (user_id, device_id). Sessions live in
   * the host's table, so a window of registrations is checked against it — one index probe
   * per registration into the host's index on refresh_tokens (user_id, device_id).
   */
  async function pruneWithoutSession(input: SliceInput): Promise<SliceResult> {
    let deleted = 0;
    const result = await runSlice(deps, 'no-session', input, async (after) => {
      const rows = await pool.any(sql.type(windowRow)`
        WITH win AS (
          SELECT id FROM push_registrations WHERE id > ${after === '' ? '0' : after}::int8 ORDER BY id LIMIT ${input.windowSize}
        ), doomed AS (
          SELECT r.id FROM push_registrations r
          WHERE r.id IN (SELECT id FROM win)
            AND NOT EXISTS (
              SELECT 1 FROM refresh_tokens t
              WHERE t.user_id = r.user_id AND t.device_id = r.device_id
                AND t.revoked_at IS NULL AND t.expires_at > now())
          FOR UPDATE OF r SKIP LOCKED
        ), deleted AS (
          DELETE FROM push_registrations r USING doomed WHERE r.id = doomed.id
          RETURNING r.user_id, r.device_id
        )
        SELECT w.last, w.scanned, d.user_id, d.device_id
        FROM (SELECT max(id)::text AS last, count(*)::int AS scanned FROM win) w
        LEFT JOIN deleted d ON true`);
      const devices = hits(rows);
      deleted += devices.length;
      await endWorkflows(devices, 'no_session');
      return windowEnd(rows, devices.length, input);
    });
    return { ...result, affected: deleted };
  }

  /** Registrations the app has not re-registered for 90 days (it re-registers on every start). */
  async function pruneStale(input: SliceInput): Promise<SliceResult> {
    return untilShort(input, async () => {
      const deleted = await pool.any(sql.type(z.object({ user_id: z.string(), device_id: z.string() }))`
        WITH doomed AS (
          SELECT id FROM push_registrations
          WHERE updated_at < now() - ${staleRegistrationAfterDays} * interval '1 day'
          ORDER BY updated_at LIMIT ${input.windowSize}
          FOR UPDATE SKIP LOCKED
        )
        DELETE FROM push_registrations r USING doomed WHERE r.id = doomed.id
        RETURNING r.user_id, r.device_id`);
      const devices = deleted.map(device);
      await endWorkflows(devices, 'not_reregistered_90d');
      return devices.length;
    });
  }

  /**
   * Pending rows nobody touched for 7 days. `last_at` is deliberately unindexed (see
   * migration 000023), so the table is walked along its primary key.
   */
  async function pruneUntouchedPending(input: SliceInput): Promise<SliceResult> {
    return runSlice(deps, 'untouched-pending', input, async (after) => {
      const [registrationId, channelId] = after === '' ? ['0', '0'] : after.split(':');
      const row = await pool.one(sql.type(z.object({ last: z.string().nullable(), scanned: z.number(), deleted: z.number() }))`
        WITH win AS (
          SELECT registration_id, channel_id FROM push_pending
          WHERE (registration_id, channel_id) > (${registrationId!}::int8, ${channelId!}::int8)
          ORDER BY registration_id, channel_id LIMIT ${input.windowSize}
        ), doomed AS (
          SELECT p.registration_id, p.channel_id FROM push_pending p JOIN win USING (registration_id, channel_id)
          WHERE p.last_at < now() - ${untouchedPendingAfterDays} * interval '1 day'
          FOR UPDATE OF p SKIP LOCKED
        ), deleted AS (
          DELETE FROM push_pending p USING doomed
          WHERE p.registration_id = doomed.registration_id AND p.channel_id = doomed.channel_id
          RETURNING 1
        )
        SELECT (SELECT registration_id || ':' || channel_id FROM win ORDER BY registration_id DESC, channel_id DESC LIMIT 1) AS last,
               (SELECT count(*)::int FROM win) AS scanned,
               (SELECT count(*)::int FROM deleted) AS deleted`);
      pendingRowsPruned.inc(row.deleted);
      return { affected: row.deleted, last: row.last ?? undefined, end: row.scanned < input.windowSize };
    });
  }

  /** Ids of counted message events, once the stream can no longer redeliver them. */
  async function pruneProcessedEvents(input: SliceInput): Promise<SliceResult> {
    return untilShort(input, async () => {
      const deleted = await pool.oneFirst(sql.type(z.object({ count: z.number() }))`
        WITH doomed AS (
          SELECT message_id FROM push_processed_events
          WHERE processed_at < now() - ${processedEventRetentionMs} * interval '1 millisecond'
          ORDER BY processed_at LIMIT ${input.windowSize}
          FOR UPDATE SKIP LOCKED
        ), deleted AS (
          DELETE FROM push_processed_events e USING doomed WHERE e.message_id = doomed.message_id RETURNING 1
        )
        SELECT count(*)::int AS count FROM deleted`);
      processedEventsPruned.inc(deleted);
      return deleted;
    });
  }

  /**
   * Registrations with a message waiting longer than the re-wake interval and no wake for as
   * long: a lost signal or a wiped Temporal namespace. Signal-with-start wakes (or recreates)
   * their workflow, which claims in PostgreSQL as usual.
   */
  async function healStranded(input: SliceInput): Promise<SliceResult> {
    const rewake = deps.policy.rewakeAfterMs;
    let signalled = 0;
    const result = await runSlice(deps, 'stranded', input, async (after) => {
      const rows = await pool.any(sql.type(windowRow.extend({ transport: transportNameSchema.nullable() }))`
        WITH win AS (
          SELECT id, user_id, device_id, transport, last_woken_at FROM push_registrations
          WHERE id > ${after === '' ? '0' : after}::int8 ORDER BY id LIMIT ${input.windowSize}
        ), stranded AS (
          SELECT r.user_id, r.device_id, r.transport FROM win r
          WHERE (r.last_woken_at IS NULL OR r.last_woken_at < now() - ${rewake} * interval '1 millisecond')
            AND EXISTS (
              SELECT 1 FROM push_pending p
              WHERE p.registration_id = r.id AND p.first_at < now() - ${rewake} * interval '1 millisecond')
        )
        SELECT w.last, w.scanned, s.user_id, s.device_id, s.transport
        FROM (SELECT max(id)::text AS last, count(*)::int AS scanned FROM win) w
        LEFT JOIN stranded s ON true`);
      const stranded = rows.flatMap((r) =>
        r.user_id === null || r.device_id === null || r.transport === null
          ? []
          : [{ userId: r.user_id, deviceId: r.device_id, transport: r.transport }],
      );
      const failed = await signalEach(stranded, (d) => signalPending(deps.temporal, deps.taskQueue, d, d.transport));
      if (failed > 0) throw new Error(`could not signal ${failed} of ${stranded.length} stranded registrations`);
      healed.inc(stranded.length);
      signalled += stranded.length;
      if (stranded.length > 0) log.info({ count: stranded.length }, 'healed stranded registrations');
      return windowEnd(rows, stranded.length, input);
    });
    return { ...result, affected: signalled };
  }

  /**
   * Running registration workflows whose registration is gone — its `stop` signal was lost, or
   * the host deleted the user and the registration went by `ON DELETE CASCADE` — are told to
   * stop: each looks at PostgreSQL and ends (a registration re-created meanwhile keeps it).
   * Temporal's list of running workflows is walked newest first, one page per window; the
   * position is the start time and id of the last workflow handled (an orphan never continues as
   * new — it has nothing to wake — so its start time stays put).
   */
  async function endOrphanWorkflows(input: SliceInput): Promise<SliceResult> {
    let ended = 0;
    let iterator: AsyncIterator<{ workflowId: string; startedAt: string }> | undefined;
    let listedFrom: string | undefined;
    try {
      const result = await runSlice(deps, 'orphan-workflows', input, async (after) => {
        // The position is "<start time> <workflow id>" of the last workflow handled.
        const [startedAt = '', handledId] = after === '' ? [] : [after.slice(0, after.indexOf(' ')), after.slice(after.indexOf(' ') + 1)];
        if (iterator === undefined || listedFrom !== after) {
          // Within a slice one listing is paged through; a new slice lists again from its
          // position (`StartTime <=`: a workflow sharing the last one's start time is not missed).
          await iterator?.return?.();
          iterator = listRunningRegistrations(deps.temporal, { taskQueue: deps.taskQueue, startedAtOrBefore: startedAt, pageSize: input.windowSize });
        }
        const page: { workflowId: string; startedAt: string }[] = [];
        let exhausted = false;
        while (page.length < input.windowSize) {
          const next = await iterator.next();
          if (next.done === true) {
            exhausted = true;
            break;
          }
          if (next.value.workflowId === handledId && next.value.startedAt === startedAt) continue; // the last slice's last one
          page.push(next.value);
        }
        const parsed = page.flatMap((w) => {
          const d = parseRegistrationWorkflowId(w.workflowId);
          return d === undefined ? [] : [d];
        });
        const orphans = await pool.any(sql.type(z.object({ user_id: z.string(), device_id: z.string() }))`
          SELECT w.user_id::text AS user_id, w.device_id
          FROM unnest(${sql.array(
            parsed.map((d) => d.userId),
            'int8',
          )}, ${sql.array(
            parsed.map((d) => d.deviceId),
            'text',
          )}) AS w(user_id, device_id)
          WHERE NOT EXISTS (SELECT 1 FROM push_registrations r WHERE r.user_id = w.user_id AND r.device_id = w.device_id)`);
        const devices = orphans.map(device);
        const failed = await signalEach(devices, (d) => signalDeleted(deps.temporal, d));
        if (failed > 0) log.warn({ failed }, 'could not tell some orphaned workflows to end; the next pass tries again');
        orphanWorkflowsEnded.inc(devices.length - failed);
        ended += devices.length - failed;
        if (devices.length > 0) log.info({ count: devices.length - failed }, 'told workflows without a registration to end');
        const last = page.at(-1);
        listedFrom = last === undefined ? undefined : `${last.startedAt} ${last.workflowId}`;
        return { affected: devices.length, last: listedFrom, end: exhausted };
      });
      return { ...result, affected: ended };
    } finally {
      await iterator?.return?.();
    }
  }

  /**
   * Registrations without a running workflow (a start that never reached Temporal, a wiped
   * namespace) get one, as after their `PUT`. A window of registrations is compared with
   * Temporal's list of running workflows of the same users.
   */
  async function startMissingWorkflows(input: SliceInput): Promise<SliceResult> {
    let started = 0;
    const result = await runSlice(deps, 'missing-workflows', input, async (after) => {
      const rows = await pool.any(sql.type(z.object({ id: z.string(), user_id: z.string(), device_id: z.string(), transport: transportNameSchema }))`
        SELECT id, user_id, device_id, transport FROM push_registrations
        WHERE id > ${after === '' ? '0' : after}::int8 ORDER BY id LIMIT ${input.windowSize}`);
      const running = new Set<string>();
      const users = [...new Set(rows.map((r) => r.user_id))];
      for await (const w of listRunningRegistrations(deps.temporal, { taskQueue: deps.taskQueue, userIds: users, pageSize: 1_000 }))
        running.add(w.workflowId);
      const missing = rows.filter((r) => !running.has(registrationWorkflowId(r.user_id, r.device_id)));
      let startedHere = 0;
      const failed = await signalEach(missing, async (r) => {
        if (await startIfMissing(deps.temporal, deps.taskQueue, device(r), r.transport)) startedHere++;
      });
      if (failed > 0) throw new Error(`could not start ${failed} of ${missing.length} missing registration workflows`);
      missingWorkflowsStarted.inc(startedHere);
      started += startedHere;
      if (startedHere > 0) log.info({ count: startedHere }, 'started missing registration workflows');
      return { affected: startedHere, last: rows.at(-1)?.id, end: rows.length < input.windowSize };
    });
    return { ...result, affected: started };
  }

  async function endWorkflows(devices: readonly DeviceIdentity[], reason: string): Promise<void> {
    if (devices.length === 0) return;
    prunes.inc({ reason }, devices.length);
    log.info({ count: devices.length, reason }, 'registrations pruned');
    // The rows are gone whatever happens next; a workflow that misses its stop signal is
    // found by the orphan scan, so a failed signal is logged, not retried.
    const failed = await signalEach(devices, (d) => signalDeleted(deps.temporal, d));
    if (failed > 0) log.warn({ failed, reason }, "could not tell some pruned registrations' workflows to end");
  }

  return { pruneWithoutSession, pruneStale, pruneUntouchedPending, pruneProcessedEvents, healStranded, endOrphanWorkflows, startMissingWorkflows };
}

/** Batch after batch of `batch()` (which returns how many it handled) until one comes back short or the slice is used up. */
async function untilShort(input: SliceInput, batch: () => Promise<number>): Promise<SliceResult> {
  const started = Date.now();
  let affected = 0;
  for (let batches = 1; ; batches++) {
    const handled = await batch();
    affected += handled;
    if (handled < input.windowSize) return { affected, passComplete: true };
    if (batches >= input.windowsPerSlice || Date.now() - started >= input.sliceMs) return { affected, passComplete: false };
  }
}

function hits(rows: readonly z.infer<typeof windowRow>[]): DeviceIdentity[] {
  return rows.flatMap((r) => (r.user_id === null || r.device_id === null ? [] : [{ userId: r.user_id, deviceId: r.device_id }]));
}

function windowEnd(rows: readonly z.infer<typeof windowRow>[], affected: number, input: SliceInput): WindowResult {
  const first = rows[0];
  return { affected, last: first?.last ?? undefined, end: (first?.scanned ?? 0) < input.windowSize };
}

function device(row: { user_id: string; device_id: string }): DeviceIdentity {
  return { userId: row.user_id, deviceId: row.device_id };
}

/** Runs `work` over `items`, at most 16 at a time; returns how many failed. */
async function signalEach<T>(items: readonly T[], work: (item: T) => Promise<void>): Promise<number> {
  return (await settleAll(items, 16, work)).length;
}

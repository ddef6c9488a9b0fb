/**
 * `POST /api/push/drain` (docs/design.md, Device API): in one transaction, take every pending row of the
 * device (`DELETE … RETURNING`, so two concurrent drains never get the same row), clear its
 * outstanding wake and note the drain (its time; no wake since). Rows for channels the caller
 * may no longer see — left the DM, lost ViewChannel, channel gone — are deleted but not
 * returned: a drain never reveals a channel. The drain is the receipt of the wakes before it
 * (a phone drains only once woken, or opened): what it cleared and took is returned for the
 * end-to-end figures. Each row a traced message left (its `trace_parent`, migration 000032)
 * ends that message's trace with a `push.drain` span (docs/operations.md, "Tracing one message").
 */
import { sql } from 'slonik';
import { z } from 'zod';
import type { DatabasePool } from '../db/pool.js';
import { channelViewers } from '../db/permissions.js';
import { transportNameSchema, type DeviceIdentity, type TransportName, type WakePriority } from '../../domain/vocabulary.js';
import { contextOfTraceparent, recordPastSpan, spanAttribute } from '../tracing/spans.js';
import { lowered, type WakeReport } from './drain-request.js';

export interface DrainItem {
  readonly channel_id: string;
  readonly server_id: string | null;
  readonly is_dm: boolean;
  readonly message_count: number;
  readonly first_message_id: string;
  readonly first_at: string;
  readonly last_message_id: string;
}

const pendingRow = z.object({
  channel_id: z.string(),
  message_count: z.number().int(),
  first_message_id: z.string(),
  first_at: z.date(),
  last_message_id: z.string(),
  is_dm: z.boolean(),
  trace_parent: z.string().nullable(),
});

const visibleChannel = z.object({ channel_id: z.string(), server_id: z.string().nullable(), is_dm: z.boolean() });

/** The registration as the drain found it: the wake it clears, if one was outstanding. */
const drainedRegistration = z.object({
  id: z.string(),
  transport: transportNameSchema,
  wake_outstanding: z.boolean(),
  last_woken_at: z.date().nullable(),
  last_wake_priority: z.enum(['normal', 'high']).nullable(),
});

export interface Drained {
  /** What the device is given, DMs first, then oldest first. */
  readonly items: DrainItem[];
  readonly transport: TransportName;
  /** The wake this drain cleared: its claim's time (ms) and priority; undefined when none was outstanding. */
  readonly clearedWake: { readonly claimedAt: number; readonly priority: WakePriority } | undefined;
  /** Every row taken, visible or not: when its first message was created (ms), and whether a DM. */
  readonly taken: ReadonlyArray<{ readonly firstAt: number; readonly isDm: boolean }>;
}

/**
 * Drains the device; null when it has no registration. One transaction: the registration row is
 * locked and read as it is now (a locking read returns the latest version, so of two drains at
 * once only the first sees the wake outstanding), then updated — the wake cleared, the drain's
 * time, no wake since — then the pending rows are taken.
 */
export async function drainPending(pool: DatabasePool, device: DeviceIdentity, report?: WakeReport): Promise<Drained | null> {
  // What the phone saw of its wake: a HIGH wake it got as NORMAL sets `priority_lowered` and is
  // counted; a HIGH wake it got as HIGH clears it; a NORMAL wake says nothing of HIGH ones.
  const reportsHigh = report?.originalPriority === 'high';
  const isLowered = report !== undefined && lowered(report);
  const startedAt = Date.now();
  let rowsTaken: readonly z.infer<typeof pendingRow>[] = [];
  const result = await pool.transaction(async (tx): Promise<Drained | null> => {
    const registration = await tx.maybeOne(sql.type(drainedRegistration)`
      WITH found AS (
        SELECT id, transport, wake_outstanding, last_woken_at, last_wake_priority FROM push_registrations
        WHERE user_id = ${device.userId} AND device_id = ${device.deviceId}
        FOR NO KEY UPDATE
      ), drained AS (
        UPDATE push_registrations r
        SET wake_outstanding = false, last_drained_at = now(), wakes_since_drain = 0, repeatedly_undrained = false,
            priority_lowered = CASE WHEN ${reportsHigh} THEN ${isLowered} ELSE r.priority_lowered END,
            priority_lowered_wakes = r.priority_lowered_wakes + ${isLowered ? 1 : 0}
        FROM found WHERE r.id = found.id
        RETURNING r.id
      )
      SELECT found.id::text AS id, found.transport, found.wake_outstanding, found.last_woken_at, found.last_wake_priority
      FROM found JOIN drained ON drained.id = found.id
    `);
    if (registration === null) return null;
    const drained = await tx.any(sql.type(pendingRow)`
      DELETE FROM push_pending WHERE registration_id = ${registration.id}
      RETURNING channel_id, message_count, first_message_id, first_at, last_message_id, is_dm, trace_parent
    `);
    rowsTaken = drained;
    const clearedWake =
      registration.wake_outstanding && registration.last_woken_at !== null
        ? { claimedAt: registration.last_woken_at.getTime(), priority: registration.last_wake_priority ?? ('high' as const) }
        : undefined;
    const taken = drained.map((row) => ({ firstAt: row.first_at.getTime(), isDm: row.is_dm }));
    const result = { transport: registration.transport, clearedWake, taken };
    if (drained.length === 0) return { ...result, items: [] };
    const visible = await tx.any(sql.type(visibleChannel)`
      SELECT DISTINCT channel_id, server_id, is_dm FROM (${channelViewers(
        drained.map((row) => row.channel_id),
        device.userId,
      )}) viewers
    `);
    return { ...result, items: joinVisible(drained, visible) };
  });
  traceDrain(rowsTaken, startedAt);
  return result;
}

/** One `push.drain` span in each traced message's trace the drain took rows of (committed). */
function traceDrain(rows: readonly z.infer<typeof pendingRow>[], startedAt: number): void {
  const byTrace = new Map<string, number>();
  for (const row of rows) if (row.trace_parent !== null) byTrace.set(row.trace_parent, (byTrace.get(row.trace_parent) ?? 0) + 1);
  for (const [traceparent, count] of byTrace) {
    const parent = contextOfTraceparent(traceparent);
    if (parent !== undefined) recordPastSpan('push.drain', parent, startedAt, { [spanAttribute.rows]: count });
  }
}

function joinVisible(drained: readonly z.infer<typeof pendingRow>[], visible: readonly z.infer<typeof visibleChannel>[]): DrainItem[] {
  const byChannel = new Map(visible.map((channel) => [channel.channel_id, channel]));
  const items = drained.flatMap((row) => {
    const channel = byChannel.get(row.channel_id);
    if (channel === undefined) return [];
    return [{ row, channel }];
  });
  items.sort(
    (a, b) =>
      Number(b.channel.is_dm) - Number(a.channel.is_dm) ||
      a.row.first_at.getTime() - b.row.first_at.getTime() ||
      compareIds(a.row.channel_id, b.row.channel_id),
  );
  return items.map(({ row, channel }) => ({
    channel_id: row.channel_id,
    server_id: channel.server_id,
    is_dm: channel.is_dm,
    message_count: row.message_count,
    first_message_id: row.first_message_id,
    first_at: row.first_at.toISOString(),
    last_message_id: row.last_message_id,
  }));
}

function compareIds(a: string, b: string): number {
  return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
}

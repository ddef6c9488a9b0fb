/**
 * `POST /api/push/drain` (docs/design.md, Device API): in one transaction, take every pending row of the
 * device (`DELETE … RETURNING`, so two concurrent drains never get the same row) and clear
 * its outstanding wake. Rows for channels the caller may no longer see — left the DM, lost
 * ViewChannel, channel gone — are deleted but not returned: a drain never reveals a channel.
 * Each row a traced message left (its `trace_parent`, migration 000032) ends that message's
 * trace with a `push.drain` span (docs/operations.md, "Tracing one message").
 */
import { sql } from 'slonik';
import { z } from 'zod';
import type { DatabasePool } from '../db/pool.js';
import { channelViewers } from '../db/permissions.js';
import type { DeviceIdentity } from '../domain.js';
import { contextOfTraceparent, recordPastSpan, spanAttribute } from '../tracing/spans.js';

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
  trace_parent: z.string().nullable(),
});

const visibleChannel = z.object({ channel_id: z.string(), server_id: z.string().nullable(), is_dm: z.boolean() });

/** The drained items, DMs first, then oldest first; null when the device has no registration. */
export async function drainPending(pool: DatabasePool, device: DeviceIdentity): Promise<DrainItem[] | null> {
  const startedAt = Date.now();
  let taken: readonly z.infer<typeof pendingRow>[] = [];
  const items = await pool.transaction(async (tx) => {
    const registration = await tx.maybeOne(sql.type(z.object({ id: z.string() }))`
      UPDATE push_registrations SET wake_outstanding = false
      WHERE user_id = ${device.userId} AND device_id = ${device.deviceId}
      RETURNING id
    `);
    if (registration === null) return null;
    const drained = await tx.any(sql.type(pendingRow)`
      DELETE FROM push_pending WHERE registration_id = ${registration.id}
      RETURNING channel_id, message_count, first_message_id, first_at, last_message_id, trace_parent
    `);
    taken = drained;
    if (drained.length === 0) return [];
    const visible = await tx.any(sql.type(visibleChannel)`
      SELECT DISTINCT channel_id, server_id, is_dm FROM (${channelViewers(
        drained.map((row) => row.channel_id),
        device.userId,
      )}) viewers
    `);
    return joinVisible(drained, visible);
  });
  traceDrain(taken, startedAt);
  return items;
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

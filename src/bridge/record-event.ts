/**
 * Records one MESSAGE_CREATE in one short transaction, exactly once (contract §7):
 *
 * 1. the channel must exist (`channels` also says whether it is a DM — never the event);
 * 2. the message id goes into the `push_processed_events` ledger; if it was already there
 *    (a redelivery, or the host publishing twice) nothing is counted again;
 * 3. a new event upserts `push_pending` for every registration of every recipient in one
 *    statement, and reports the rows it created: those devices get a `pending` signal. A
 *    device that already has a row for the channel is already signalled and costs nothing;
 * 4. a repeated event instead reports the rows this event created and still owns
 *    (`first_message_id` = its id): their signal may have been lost with the first delivery.
 *
 * Concurrency: two replicas may handle two events of one channel at once, in either order.
 * The upsert keeps the earliest first message and the greatest last one, so order does not
 * matter; it writes rows in registration-id order, so two such upserts wait for each other
 * rather than deadlock. Two copies of one event serialize on the ledger's primary key: the
 * second waits for the first to commit (then counts nothing) or roll back (then counts).
 */
import { sql, type DatabasePool, type DatabaseTransactionConnection } from 'slonik';
import { z } from 'zod';
import type { MessageEvent } from './event.js';
import { messageRecipients } from './recipients.js';

export interface DeviceToSignal {
  readonly registrationId: string;
  readonly userId: string;
  readonly deviceId: string;
  readonly transport: 'fcm' | 'unifiedpush';
}

export type Recorded =
  | { readonly outcome: 'unknown_channel' }
  | { readonly outcome: 'counted'; readonly created: readonly DeviceToSignal[]; readonly updated: number }
  | { readonly outcome: 'duplicate'; readonly created: readonly DeviceToSignal[] };

const device = z.object({
  registrationId: z.string(),
  userId: z.string(),
  deviceId: z.string(),
  transport: z.enum(['fcm', 'unifiedpush']),
});

export async function recordMessageEvent(pool: DatabasePool, event: MessageEvent): Promise<Recorded> {
  return pool.transaction(async (tx) => {
    const channel = await tx.maybeOne(sql.type(z.object({ id: z.string() }))`SELECT id FROM channels WHERE id = ${event.channelId}`);
    if (channel === null) return { outcome: 'unknown_channel' };
    const isNew = await tx.maybeOneFirst(sql.type(z.object({ message_id: z.string() }))`
      INSERT INTO push_processed_events (message_id) VALUES (${event.messageId})
      ON CONFLICT (message_id) DO NOTHING
      RETURNING message_id`);
    if (isNew === null) return { outcome: 'duplicate', created: await rowsOwnedBy(tx, event) };
    return { outcome: 'counted', ...(await upsertPending(tx, event)) };
  });
}

const upserted = z.object({ updated: z.number(), created: z.array(device) });

async function upsertPending(tx: DatabaseTransactionConnection, event: MessageEvent) {
  return tx.one(sql.type(upserted)`
    WITH written AS (
      INSERT INTO push_pending AS p
        (registration_id, channel_id, message_count, first_message_id, first_at, last_message_id, is_dm, last_at)
      SELECT r.id, ${event.channelId}, 1, ${event.messageId}, ${event.createdAt.toISOString()}::timestamptz,
             ${event.messageId}, recipient.is_dm, now()
      FROM (${messageRecipients(event)}) recipient
      JOIN push_registrations r ON r.user_id = recipient.user_id
      ORDER BY r.id
      ON CONFLICT (registration_id, channel_id) DO UPDATE SET
        message_count = p.message_count + 1,
        first_message_id = LEAST(p.first_message_id, EXCLUDED.first_message_id),
        first_at = CASE WHEN EXCLUDED.first_message_id < p.first_message_id THEN EXCLUDED.first_at ELSE p.first_at END,
        last_message_id = GREATEST(p.last_message_id, EXCLUDED.last_message_id),
        is_dm = EXCLUDED.is_dm,
        last_at = now()
      -- xmax = 0 only on a row version this statement inserted, not one it updated
      RETURNING p.registration_id, (p.xmax = 0) AS created
    )
    SELECT
      (SELECT count(*) FROM written WHERE NOT created)::int4 AS updated,
      COALESCE((
        SELECT json_agg(json_build_object(
          'registrationId', r.id::text, 'userId', r.user_id::text, 'deviceId', r.device_id, 'transport', r.transport) ORDER BY r.id)
        FROM written w JOIN push_registrations r ON r.id = w.registration_id
        WHERE w.created
      ), '[]'::json) AS created`);
}

/**
 * Rows of this channel whose first message is this event: created by its first delivery and
 * not drained since. Found through the recipients (the primary key's order) rather than by
 * channel alone, which no index serves; a device that lost sight of the channel meanwhile
 * is rightly not woken.
 */
async function rowsOwnedBy(tx: DatabaseTransactionConnection, event: MessageEvent): Promise<readonly DeviceToSignal[]> {
  return tx.any(sql.type(device)`
    SELECT r.id::text AS "registrationId", r.user_id::text AS "userId", r.device_id AS "deviceId", r.transport
    FROM (${messageRecipients(event)}) recipient
    JOIN push_registrations r ON r.user_id = recipient.user_id
    JOIN push_pending p ON p.registration_id = r.id AND p.channel_id = ${event.channelId}
    WHERE p.first_message_id = ${event.messageId}
    ORDER BY r.id`);
}

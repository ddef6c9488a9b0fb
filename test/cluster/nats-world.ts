/**
 * What the NATS tests of the cluster tier share: a DM whose reader has a registration, events
 * published into it as the chat server publishes them, and what PostgreSQL recorded of them.
 */
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { hostFixtures, nextId } from '../support/host-fixtures.js';

export interface Conversation {
  readonly dm: string;
  readonly author: string;
  readonly registrationId: string;
  /** A MESSAGE_CREATE body in this DM, with a fresh message id. */
  event(): { id: string; channel_id: string; author_id: string; created_at: string };
}

export async function conversation(pool: DatabasePool): Promise<Conversation> {
  const host = hostFixtures(pool);
  const [author, reader] = await host.users(2);
  const dm = await host.dm([author!, reader!]);
  const registration = await host.registration(reader!);
  return {
    dm,
    author: author!,
    registrationId: registration.id,
    event: () => ({ id: nextId(), channel_id: dm, author_id: author!, created_at: new Date().toISOString() }),
  };
}

/** How many of `ids` the bridge recorded, and the reader's pending count for the DM. */
export async function recorded(pool: DatabasePool, c: Conversation, ids: readonly string[]): Promise<{ events: number; pendingMessages: number }> {
  const events = await pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int4 AS n FROM push_processed_events WHERE message_id = ANY(${sql.array(ids, 'int8')})`);
  const pendingMessages = await pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT COALESCE(sum(message_count), 0)::int4 AS n FROM push_pending WHERE registration_id = ${c.registrationId} AND channel_id = ${c.dm}`);
  return { events, pendingMessages };
}

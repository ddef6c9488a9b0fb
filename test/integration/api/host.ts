/**
 * Just enough of the host's tables for the api tests: users, DMs, servers and
 * their channels, sessions and key bundles, pending rows — plus a snapshot of every table the
 * api can write, to prove that a refused request changed nothing.
 */
import { randomInt } from 'node:crypto';
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';

/** Unique snowflakes across test files (they share one Temporal server, where ids meet). */
export const nextId: () => string = (() => {
  const base = BigInt(randomInt(1, 2 ** 40 - 1)) * 1_000_000n;
  let counter = 0n;
  return () => (base + ++counter).toString();
})();

export const VIEW_CHANNEL = 1n << 10n;

export async function createUser(pool: DatabasePool): Promise<string> {
  const id = nextId();
  await pool.query(sql.unsafe`INSERT INTO users (id, username) VALUES (${id}, ${`user-${id}`})`);
  return id;
}

/** A live session (docs/design.md, Host tables) for the device, unless it has one: `PUT /api/push/registration` needs one. */
export async function signIn(pool: DatabasePool, userId: string, deviceId: string): Promise<void> {
  await pool.query(sql.unsafe`
    INSERT INTO refresh_tokens (user_id, device_id, expires_at)
    SELECT ${userId}, ${deviceId}, now() + interval '30 days'
    WHERE NOT EXISTS (
      SELECT 1 FROM refresh_tokens WHERE user_id = ${userId} AND device_id = ${deviceId} AND revoked_at IS NULL AND expires_at > now())`);
}

export async function createDm(pool: DatabasePool, members: readonly string[]): Promise<string> {
  const id = nextId();
  await pool.query(sql.unsafe`INSERT INTO channels (id, server_id, type) VALUES (${id}, NULL, ${members.length > 2 ? 'group_dm' : 'dm'})`);
  await pool.query(sql.unsafe`INSERT INTO channel_members (channel_id, user_id) SELECT ${id}, unnest(${sql.array(members, 'int8')})`);
  return id;
}

/** A server whose @everyone role holds `everyone` permissions, with `members` (the owner is one). */
export async function createServer(pool: DatabasePool, owner: string, members: readonly string[], everyone = VIEW_CHANNEL): Promise<string> {
  const id = nextId();
  await pool.query(sql.unsafe`INSERT INTO servers (id, owner_id, name) VALUES (${id}, ${owner}, 'test')`);
  await pool.query(sql.unsafe`INSERT INTO roles (id, server_id, permissions, position) VALUES (${id}, ${id}, ${everyone.toString()}, 0)`);
  await pool.query(sql.unsafe`
    INSERT INTO server_members (server_id, user_id) SELECT ${id}, unnest(${sql.array([owner, ...members], 'int8')}) ON CONFLICT DO NOTHING
  `);
  return id;
}

export async function createTextChannel(pool: DatabasePool, serverId: string): Promise<string> {
  const id = nextId();
  await pool.query(sql.unsafe`INSERT INTO channels (id, server_id, type) VALUES (${id}, ${serverId}, 'text')`);
  return id;
}

export async function denyViewChannel(pool: DatabasePool, channelId: string, userId: string): Promise<void> {
  await pool.query(sql.unsafe`
    INSERT INTO permission_overwrites (channel_id, target_type, target_id, allow, deny)
    VALUES (${channelId}, 'member', ${userId}, 0, ${VIEW_CHANNEL.toString()})
  `);
}

export async function registrationId(pool: DatabasePool, userId: string, deviceId: string): Promise<string> {
  return pool.oneFirst(
    sql.type(z.object({ id: z.string() }))`SELECT id FROM push_registrations WHERE user_id = ${userId} AND device_id = ${deviceId}`,
  );
}

export interface PendingRow {
  readonly channelId: string;
  readonly isDm: boolean;
  readonly firstAt: Date;
  readonly messageCount?: number;
}

/** Pending rows as the bridge writes them; message ids derived from the channel id. */
export async function addPending(pool: DatabasePool, registration: string, rows: readonly PendingRow[]): Promise<void> {
  for (const row of rows) {
    const first = nextId();
    await pool.query(sql.unsafe`
      INSERT INTO push_pending (registration_id, channel_id, message_count, first_message_id, first_at, last_message_id, is_dm)
      VALUES (${registration}, ${row.channelId}, ${row.messageCount ?? 1}, ${first}, ${row.firstAt.toISOString()}, ${nextId()}, ${row.isDm})
    `);
  }
}

const registrationRow = z.object({
  id: z.string(),
  transport: z.string(),
  token: z.string(),
  up_p256dh: z.instanceof(Buffer).nullable(),
  up_auth: z.instanceof(Buffer).nullable(),
  wake_outstanding: z.boolean(),
  failures: z.number(),
  created_at: z.date(),
  updated_at: z.date(),
});

export async function registrationRowOf(pool: DatabasePool, userId: string, deviceId: string) {
  return pool.maybeOne(sql.type(registrationRow)`
    SELECT id, transport, token, up_p256dh, up_auth, wake_outstanding, failures, created_at, updated_at
    FROM push_registrations WHERE user_id = ${userId} AND device_id = ${deviceId}
  `);
}

export async function pendingChannels(pool: DatabasePool, registration: string): Promise<string[]> {
  const rows = await pool.anyFirst(sql.type(z.object({ channel_id: z.string() }))`
    SELECT channel_id FROM push_pending WHERE registration_id = ${registration} ORDER BY channel_id
  `);
  return [...rows];
}

/** Every row of every table the api writes, as text: equal snapshots ⇒ nothing changed. */
export async function snapshot(pool: DatabasePool): Promise<string> {
  const tables = ['push_registrations', 'push_pending', 'device_keys', 'refresh_tokens'];
  const parts: string[] = [];
  for (const table of tables) {
    const rows = await pool.anyFirst(sql.type(z.object({ row: z.string() }))`
      SELECT t::text AS row FROM ${sql.identifier([table])} t ORDER BY t::text
    `);
    parts.push(`${table}:\n${rows.join('\n')}`);
  }
  return parts.join('\n');
}

/**
 * The host world of the benchmark, inserted in bulk: users with a live session (the
 * maintenance rule "no live session" must not prune them), servers whose channels every
 * member may see through the full permission path (roles, overwrites), and UnifiedPush
 * devices with RFC 8291 keys and an endpoint on the fake distributor.
 */
import { randomInt } from 'node:crypto';
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { VIEW_CHANNEL } from '../src/testing.js';
import { createDeviceKeys, type DeviceKeys, type FakeDistributor } from '../simulator/distributor.js';

const SEND_MESSAGES = 1n << 11n;

export interface BenchDevice {
  readonly userId: string;
  readonly deviceId: string;
  readonly endpoint: string;
  readonly keys: DeviceKeys;
}

export interface ServerWorld {
  readonly serverId: string;
  /** The owner: the author of the benchmark's messages, with no device of their own. */
  readonly ownerId: string;
  readonly channelIds: readonly string[];
  /** One phone per member, in user-id order. */
  readonly devices: readonly BenchDevice[];
}

/**
 * Decimal snowflakes unique across processes sharing one Temporal server (test files run in
 * parallel, and workflow ids are `push-device:<user>:<device>` namespace-wide): a random block of
 * a million ids per process, below `nextMessageId`'s range.
 */
export const nextIds: (count: number) => string[] = (() => {
  let next = BigInt(randomInt(1_000, 8_000_000)) * 1_000_000n;
  return (count) => Array.from({ length: count }, () => (next++).toString());
})();

/** A message id above every id `nextIds` hands out. */
export const nextMessageId: () => string = (() => {
  let next = 9_000_000_000_000n;
  return () => (next++).toString();
})();

/** Users, each with a live session for their `phone`. */
export async function seedUsers(pool: DatabasePool, count: number): Promise<string[]> {
  const ids = nextIds(count);
  const array = sql.array(ids, 'int8');
  await pool.query(sql.unsafe`INSERT INTO users (id, username) SELECT id, 'bench-' || id FROM unnest(${array}) AS id`);
  await pool.query(sql.unsafe`
    INSERT INTO refresh_tokens (user_id, device_id, expires_at)
    SELECT id, 'phone', now() + interval '30 days' FROM unnest(${array}) AS id`);
  return ids;
}

/** A device (keys, endpoint) for each user; nothing is registered yet. */
export function devicesFor(userIds: readonly string[], distributor: FakeDistributor): BenchDevice[] {
  return userIds.map((userId) => {
    const keys = createDeviceKeys();
    return { userId, deviceId: 'phone', keys, endpoint: distributor.register(keys) };
  });
}

/** A server of `members` members plus its owner; every member may view each of its `channels`. */
export async function seedServer(
  pool: DatabasePool,
  options: { readonly members: number; readonly channels: number; readonly distributor: FakeDistributor },
): Promise<ServerWorld> {
  const [ownerId] = await seedUsers(pool, 1);
  const memberIds = await seedUsers(pool, options.members);
  const [serverId, ...roleIds] = nextIds(4);
  const channelIds = nextIds(options.channels);
  const everyone = VIEW_CHANNEL | SEND_MESSAGES;
  await pool.transaction(async (tx) => {
    await tx.query(sql.unsafe`INSERT INTO servers (id, owner_id, name) VALUES (${serverId!}, ${ownerId!}, 'bench')`);
    await tx.query(
      sql.unsafe`INSERT INTO roles (id, server_id, permissions, position) VALUES (${serverId!}, ${serverId!}, ${everyone.toString()}, 0)`,
    );
    for (const [i, roleId] of roleIds.entries()) {
      await tx.query(
        sql.unsafe`INSERT INTO roles (id, server_id, permissions, position) VALUES (${roleId}, ${serverId!}, ${(SEND_MESSAGES << BigInt(i)).toString()}, ${i + 1})`,
      );
    }
    await tx.query(sql.unsafe`
      INSERT INTO server_members (server_id, user_id)
      SELECT ${serverId!}, id FROM unnest(${sql.array([ownerId!, ...memberIds], 'int8')}) AS id`);
    // Three members in four hold one of the extra roles: the role lookups are not empty.
    await tx.query(sql.unsafe`
      INSERT INTO member_roles (server_id, user_id, role_id)
      SELECT ${serverId!}, m.id, (${sql.array(roleIds, 'int8')})[1 + (m.n % 4)]
      FROM unnest(${sql.array(memberIds, 'int8')}) WITH ORDINALITY AS m(id, n)
      WHERE m.n % 4 < 3`);
    await tx.query(sql.unsafe`
      INSERT INTO channels (id, server_id, type) SELECT id, ${serverId!}, 'text' FROM unnest(${sql.array(channelIds, 'int8')}) AS id`);
    // Overwrites that keep everyone a viewer but make the resolution do its work.
    await tx.query(sql.unsafe`
      INSERT INTO permission_overwrites (channel_id, target_type, target_id, allow, deny)
      SELECT c, 'role', ${roleIds[0]!}::int8, ${VIEW_CHANNEL.toString()}::int8, 0::int8 FROM unnest(${sql.array(channelIds, 'int8')}) AS c
      UNION ALL
      SELECT c, 'role', ${roleIds[1]!}::int8, 0::int8, ${SEND_MESSAGES.toString()}::int8 FROM unnest(${sql.array(channelIds, 'int8')}) AS c`);
  });
  return { serverId: serverId!, ownerId: ownerId!, channelIds, devices: devicesFor(memberIds, options.distributor) };
}

/** Registers `devices` directly (the rows `PUT /api/push/registration` writes); returns their registration ids in order. */
export async function insertRegistrations(pool: DatabasePool, devices: readonly BenchDevice[]): Promise<string[]> {
  const byUser = new Map<string, string>();
  for (let start = 0; start < devices.length; start += 5_000) {
    const chunk = devices.slice(start, start + 5_000);
    const rows = await pool.any(sql.type(z.object({ id: z.string(), user_id: z.string() }))`
      INSERT INTO push_registrations (user_id, device_id, transport, token, up_p256dh, up_auth)
      SELECT r.user_id, r.device_id, 'unifiedpush', r.token, decode(r.p256dh, 'base64'), decode(r.auth, 'base64')
      FROM unnest(
        ${sql.array(
          chunk.map((d) => d.userId),
          'int8',
        )},
        ${sql.array(
          chunk.map((d) => d.deviceId),
          'text',
        )},
        ${sql.array(
          chunk.map((d) => d.endpoint),
          'text',
        )},
        ${sql.array(
          chunk.map((d) => d.keys.p256dh.toString('base64')),
          'text',
        )},
        ${sql.array(
          chunk.map((d) => d.keys.auth.toString('base64')),
          'text',
        )}
      ) AS r(user_id, device_id, token, p256dh, auth)
      RETURNING id, user_id`);
    for (const row of rows) byUser.set(row.user_id, row.id);
  }
  return devices.map((d) => byUser.get(d.userId)!);
}

/** One MESSAGE_CREATE event body (docs/design.md, Message events). */
export function messageEvent(channelId: string, authorId: string): { readonly id: string; readonly body: string } {
  const id = nextMessageId();
  return { id, body: JSON.stringify({ id, channel_id: channelId, author_id: authorId, created_at: new Date().toISOString() }) };
}

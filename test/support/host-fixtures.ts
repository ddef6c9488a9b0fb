/**
 * Seeds the host tables (users, servers, roles, channels, members, overwrites,
 * mutes) and push registrations into a test database.
 *
 *   const host = hostFixtures(db.pool);
 *   const [alice, bob] = await host.users(2);
 *   const server = await host.server({ owner: alice, everyone: VIEW_CHANNEL, members: [bob] });
 *   const mods = await host.role(server, { permissions: ADMINISTRATOR });
 *   await host.member(server, carol, { roles: [mods] });
 *   const general = await host.channel(server);
 *   await host.overwrite(general, { member: bob }, { deny: VIEW_CHANNEL });
 *   await host.mute(bob, { server }, { until: new Date(Date.now() + 3_600_000) });
 *   const phone = await host.registration(bob);
 *
 * Ids are fresh snowflakes, unique across test files run in parallel (they share one
 * Temporal server, where workflow ids are `push-device:<user>:<device>`).
 */
import { randomBytes, randomInt } from 'node:crypto';
import { sql, type DatabasePool, type DatabaseTransactionConnection } from 'slonik';
import { z } from 'zod';
import type { ChannelType, HostData } from '../../src/permissions/host-data.js';
import type { TransportName } from '../../domain/vocabulary.js';

/** Unique decimal snowflakes: a random 40-bit prefix per process, then a counter. */
export const nextId: () => string = (() => {
  const base = BigInt(randomInt(1, 2 ** 40 - 1)) * 1_000_000n;
  let counter = 0n;
  return () => (base + ++counter).toString();
})();

export interface Registration {
  readonly id: string;
  readonly userId: string;
  readonly deviceId: string;
  readonly transport: TransportName;
  readonly token: string;
}

export type OverwriteTarget = { readonly role: string } | { readonly member: string } | { readonly everyoneOf: string };
export type MuteScope = { readonly channel: string } | { readonly server: string };

export interface HostFixtures {
  user(): Promise<string>;
  users(count: number): Promise<string[]>;
  /** A server with its @everyone role (id = server id) and its owner as a member. */
  server(options: { owner: string; everyone?: bigint; members?: readonly string[] }): Promise<string>;
  role(serverId: string, options?: { permissions?: bigint; position?: number }): Promise<string>;
  member(serverId: string, userId: string, options?: { roles?: readonly string[] }): Promise<void>;
  channel(serverId: string, type?: 'text' | 'voice'): Promise<string>;
  /** A DM between two users, or a group DM between more. */
  dm(members: readonly string[]): Promise<string>;
  overwrite(channelId: string, target: OverwriteTarget, bits: { allow?: bigint; deny?: bigint }): Promise<void>;
  /** A live mute by default; `until` in the past makes an expired one, `muted: false` an unmute. */
  mute(userId: string, scope: MuteScope, options?: { until?: Date | null; muted?: boolean }): Promise<void>;
  registration(userId: string, options?: { deviceId?: string; transport?: TransportName }): Promise<Registration>;
  /** A live session of the device (an unrevoked `refresh_tokens` row a day from expiry): `PUT /api/push/registration` needs one. */
  session(userId: string, deviceId: string): Promise<void>;
  /** Inserts a whole `HostData` in one statement per table; users are created as referenced. */
  seed(data: HostData): Promise<void>;
}

export function hostFixtures(pool: DatabasePool): HostFixtures {
  const user = async () => {
    const id = nextId();
    await pool.query(sql.unsafe`INSERT INTO users (id, username) VALUES (${id}, ${`user-${id}`})`);
    return id;
  };
  const member: HostFixtures['member'] = async (serverId, userId, options = {}) => {
    await pool.query(sql.unsafe`INSERT INTO server_members (server_id, user_id) VALUES (${serverId}, ${userId}) ON CONFLICT DO NOTHING`);
    for (const roleId of options.roles ?? []) {
      await pool.query(sql.unsafe`INSERT INTO member_roles (server_id, user_id, role_id) VALUES (${serverId}, ${userId}, ${roleId})`);
    }
  };
  return {
    user,
    users: async (count) => {
      const ids: string[] = [];
      for (let i = 0; i < count; i++) ids.push(await user());
      return ids;
    },
    async server({ owner, everyone = 0n, members = [] }) {
      const id = nextId();
      await pool.query(sql.unsafe`INSERT INTO servers (id, owner_id, name) VALUES (${id}, ${owner}, ${`server-${id}`})`);
      await pool.query(sql.unsafe`INSERT INTO roles (id, server_id, permissions, position) VALUES (${id}, ${id}, ${everyone.toString()}, 0)`);
      for (const userId of [owner, ...members]) await member(id, userId);
      return id;
    },
    async role(serverId, { permissions = 0n, position = 1 } = {}) {
      const id = nextId();
      await pool.query(
        sql.unsafe`INSERT INTO roles (id, server_id, permissions, position) VALUES (${id}, ${serverId}, ${permissions.toString()}, ${position})`,
      );
      return id;
    },
    member,
    async channel(serverId, type = 'text') {
      const id = nextId();
      await pool.query(sql.unsafe`INSERT INTO channels (id, server_id, type) VALUES (${id}, ${serverId}, ${type})`);
      return id;
    },
    async dm(members) {
      const id = nextId();
      const type: ChannelType = members.length === 2 ? 'dm' : 'group_dm';
      await pool.query(sql.unsafe`INSERT INTO channels (id, server_id, type) VALUES (${id}, NULL, ${type})`);
      for (const userId of members) await pool.query(sql.unsafe`INSERT INTO channel_members (channel_id, user_id) VALUES (${id}, ${userId})`);
      return id;
    },
    async overwrite(channelId, target, { allow = 0n, deny = 0n }) {
      const [targetType, targetId] = 'member' in target ? ['member', target.member] : ['role', 'role' in target ? target.role : target.everyoneOf];
      await pool.query(sql.unsafe`
        INSERT INTO permission_overwrites (channel_id, target_type, target_id, allow, deny)
        VALUES (${channelId}, ${targetType}, ${targetId}, ${allow.toString()}, ${deny.toString()})`);
    },
    async mute(userId, scope, { until = null, muted = true } = {}) {
      const [scopeType, scopeId] = 'channel' in scope ? ['channel', scope.channel] : ['server', scope.server];
      await pool.query(sql.unsafe`
        INSERT INTO notification_settings (user_id, scope_type, scope_id, muted, mute_until)
        VALUES (${userId}, ${scopeType}, ${scopeId}, ${muted}, ${until === null ? null : until.toISOString()})
        ON CONFLICT (user_id, scope_type, scope_id) DO UPDATE SET muted = EXCLUDED.muted, mute_until = EXCLUDED.mute_until`);
    },
    async registration(userId, { deviceId = `device-${randomBytes(4).toString('hex')}`, transport = 'fcm' } = {}) {
      const token =
        transport === 'fcm' ? `fcm-token-${randomBytes(12).toString('hex')}` : `https://ntfy.example/up/${randomBytes(12).toString('hex')}`;
      const id = await pool.oneFirst(sql.type(z.object({ id: z.string() }))`
        INSERT INTO push_registrations (user_id, device_id, transport, token)
        VALUES (${userId}, ${deviceId}, ${transport}, ${token}) RETURNING id`);
      return { id, userId, deviceId, transport, token };
    },
    async session(userId, deviceId) {
      await pool.query(sql.unsafe`
        INSERT INTO refresh_tokens (user_id, device_id, expires_at) VALUES (${userId}, ${deviceId}, now() + interval '1 day')`);
    },
    seed: (data) => seedHost(pool, data),
  };
}

async function seedHost(pool: DatabasePool, data: HostData): Promise<void> {
  const userIds = new Set([
    ...data.servers.map((s) => s.ownerId),
    ...data.serverMembers.map((m) => m.userId),
    ...data.channelMembers.map((m) => m.userId),
    ...data.notificationSettings.map((s) => s.userId),
  ]);
  const mask = (bits: bigint) => bits.toString();
  await pool.transaction(async (tx) => {
    const insert = tableInserter(tx);
    await insert(
      'users',
      ['id', 'username'],
      ['int8', 'text'],
      [...userIds].map((id) => [id, `user-${id}`]),
    );
    await insert(
      'servers',
      ['id', 'owner_id'],
      ['int8', 'int8'],
      data.servers.map((s) => [s.id, s.ownerId]),
    );
    await insert(
      'server_members',
      ['server_id', 'user_id'],
      ['int8', 'int8'],
      data.serverMembers.map((m) => [m.serverId, m.userId]),
    );
    await insert(
      'roles',
      ['id', 'server_id', 'permissions', 'position'],
      ['int8', 'int8', 'int8', 'int4'],
      data.roles.map((r) => [r.id, r.serverId, mask(r.permissions), r.position]),
    );
    await insert(
      'member_roles',
      ['server_id', 'user_id', 'role_id'],
      ['int8', 'int8', 'int8'],
      data.memberRoles.map((m) => [m.serverId, m.userId, m.roleId]),
    );
    await insert(
      'channels',
      ['id', 'server_id', 'type'],
      ['int8', 'int8', 'text'],
      data.channels.map((c) => [c.id, c.serverId, c.type]),
    );
    await insert(
      'channel_members',
      ['channel_id', 'user_id'],
      ['int8', 'int8'],
      data.channelMembers.map((m) => [m.channelId, m.userId]),
    );
    await insert(
      'permission_overwrites',
      ['channel_id', 'target_type', 'target_id', 'allow', 'deny'],
      ['int8', 'text', 'int8', 'int8', 'int8'],
      data.overwrites.map((o) => [o.channelId, o.targetType, o.targetId, mask(o.allow), mask(o.deny)]),
    );
    await insert(
      'notification_settings',
      ['user_id', 'scope_type', 'scope_id', 'muted', 'mute_until'],
      ['int8', 'text', 'int8', 'bool', 'timestamptz'],
      data.notificationSettings.map((s) => [s.userId, s.scopeType, s.scopeId, s.muted, s.muteUntil?.toISOString() ?? null]),
    );
  });
}

function tableInserter(tx: DatabaseTransactionConnection) {
  return async (table: string, columns: readonly string[], types: string[], rows: readonly (readonly unknown[])[]) => {
    if (rows.length === 0) return;
    await tx.query(sql.unsafe`
      INSERT INTO ${sql.identifier([table])} (${sql.join(
        columns.map((c) => sql.identifier([c])),
        sql.fragment`, `,
      )})
      SELECT * FROM ${sql.unnest(rows as never, types)}`);
  };
}

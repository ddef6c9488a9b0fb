/**
 * Random host worlds for the differential test: two servers and a few DMs over eight users,
 * with roles at random positions, owners inside or outside their server, administrators,
 * overwrites of every kind (@everyone, roles of this or the other server, members and
 * non-members), mutes on channels and servers — live, lifted, expired or not yet expired —
 * and permission masks from the bits that matter to the full signed 64-bit range.
 *
 * fast-check generates a world of indices (shrinkable, printable); `materialize` gives it
 * fresh snowflake ids so every run can be inserted into the same database.
 */
import fc from 'fast-check';
import { ADMINISTRATOR, VIEW_CHANNEL } from '../../../src/permissions/flags.js';
import type { ChannelRow, HostData, MemberRoleRow, NotificationSettingRow, OverwriteRow, RoleRow } from '../../../src/permissions/host-data.js';
import { nextId } from '../../support/host-fixtures.js';

const USERS = 8;
export const SERVERS_PER_WORLD = 2;

/** A role of either server: one of its roles by index, or its @everyone. */
type RoleRef = { readonly server: number; readonly role: number | 'everyone' };
type Target = { readonly role: RoleRef } | { readonly member: number };
type Until = 'never' | 'past' | 'future';

interface AbstractOverwrite {
  readonly target: Target;
  readonly allow: bigint;
  readonly deny: bigint;
}

interface AbstractServer {
  readonly owner: number;
  readonly members: readonly number[];
  /** null: the server has no @everyone role row. */
  readonly everyone: bigint | null;
  readonly roles: readonly { readonly permissions: bigint; readonly position: number }[];
  readonly memberRoles: readonly { readonly user: number; readonly role: RoleRef }[];
  readonly channels: readonly { readonly type: 'text' | 'voice'; readonly overwrites: readonly AbstractOverwrite[] }[];
}

export interface AbstractWorld {
  readonly servers: readonly AbstractServer[];
  readonly dms: readonly { readonly members: readonly number[] }[];
  readonly mutes: readonly {
    readonly user: number;
    readonly scope: { channel: number } | { server: number };
    readonly muted: boolean;
    readonly until: Until;
  }[];
  /** Per channel (servers' channels first, then DMs, modulo their count): its message's author. */
  readonly authors: readonly number[];
}

const SEND_MESSAGES = 1n << 11n;
const SIGN = -(1n << 63n);

const mask: fc.Arbitrary<bigint> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(0n, VIEW_CHANNEL, ADMINISTRATOR, SEND_MESSAGES, VIEW_CHANNEL | SEND_MESSAGES) },
  { weight: 3, arbitrary: fc.subarray([VIEW_CHANNEL, ADMINISTRATOR, SEND_MESSAGES, 1n, SIGN]).map((bits) => bits.reduce((a, b) => a | b, 0n)) },
  { weight: 1, arbitrary: fc.bigInt({ min: SIGN, max: -SIGN - 1n }) },
);

const user = fc.integer({ min: 0, max: USERS - 1 });
const roleRef: fc.Arbitrary<RoleRef> = fc.record({
  // mostly this server's roles, sometimes the other server's
  server: fc.integer({ min: 0, max: SERVERS_PER_WORLD - 1 }),
  role: fc.oneof({ weight: 3, arbitrary: fc.integer({ min: 0, max: 3 }) }, { weight: 1, arbitrary: fc.constant('everyone' as const) }),
});
const target: fc.Arbitrary<Target> = fc.oneof(fc.record({ role: roleRef }), fc.record({ member: user }));
const overwrite: fc.Arbitrary<AbstractOverwrite> = fc.record({ target, allow: mask, deny: mask });

const server: fc.Arbitrary<AbstractServer> = fc.record({
  owner: user,
  members: fc.subarray([...Array(USERS).keys()], { minLength: 1 }),
  everyone: fc.option(mask, { freq: 8, nil: null }),
  roles: fc.array(fc.record({ permissions: mask, position: fc.integer({ min: 0, max: 10 }) }), { maxLength: 4 }),
  memberRoles: fc.array(fc.record({ user, role: roleRef }), { maxLength: 12 }),
  channels: fc.array(fc.record({ type: fc.constantFrom('text' as const, 'voice' as const), overwrites: fc.array(overwrite, { maxLength: 6 }) }), {
    minLength: 1,
    maxLength: 3,
  }),
});

export const abstractWorld: fc.Arbitrary<AbstractWorld> = fc.record({
  servers: fc.array(server, { minLength: SERVERS_PER_WORLD, maxLength: SERVERS_PER_WORLD }),
  dms: fc.array(fc.record({ members: fc.subarray([...Array(USERS).keys()], { minLength: 1, maxLength: 4 }) }), { maxLength: 2 }),
  mutes: fc.array(
    fc.record({
      user,
      scope: fc.oneof(fc.record({ channel: fc.nat(9) }), fc.record({ server: fc.integer({ min: 0, max: SERVERS_PER_WORLD - 1 }) })),
      muted: fc.boolean(),
      until: fc.constantFrom<Until>('never', 'past', 'future'),
    }),
    { maxLength: 8 },
  ),
  authors: fc.array(user, { minLength: 10, maxLength: 10 }),
});

export interface ConcreteWorld {
  readonly data: HostData;
  /** Every channel's message: the channel and its author. */
  readonly messages: readonly { readonly channelId: string; readonly authorId: string }[];
}

/** Gives the world fresh ids; `now` anchors mute expiry an hour either side (no boundary races). */
export function materialize(world: AbstractWorld, now: Date): ConcreteWorld {
  const users = Array.from({ length: USERS }, () => nextId());
  const serverIds = world.servers.map(() => nextId());
  const roleIds = world.servers.map((s) => s.roles.map(() => nextId()));
  const roleId = (ref: RoleRef) => (ref.role === 'everyone' ? serverIds[ref.server]! : roleIds[ref.server]![ref.role]);

  const roles: RoleRow[] = world.servers.flatMap((s, i) => [
    ...(s.everyone === null ? [] : [{ id: serverIds[i]!, serverId: serverIds[i]!, permissions: s.everyone, position: 0 }]),
    ...s.roles.map((r, j) => ({ id: roleIds[i]![j]!, serverId: serverIds[i]!, permissions: r.permissions, position: r.position })),
  ]);
  const existingRoles = new Set(roles.map((r) => r.id));
  const memberRoles: MemberRoleRow[] = world.servers.flatMap((s, i) =>
    s.memberRoles
      .filter((mr) => s.members.includes(mr.user))
      .map((mr) => ({ serverId: serverIds[i]!, userId: users[mr.user]!, roleId: roleId(mr.role) }))
      .filter((mr): mr is MemberRoleRow => mr.roleId !== undefined && existingRoles.has(mr.roleId)),
  );

  const channels: ChannelRow[] = [];
  const overwrites: OverwriteRow[] = [];
  world.servers.forEach((s, i) =>
    s.channels.forEach((c) => {
      const id = nextId();
      channels.push({ id, serverId: serverIds[i]!, type: c.type });
      for (const o of c.overwrites) {
        const [targetType, targetId] =
          'member' in o.target ? (['member', users[o.target.member]!] as const) : (['role', roleId(o.target.role)] as const);
        if (targetId !== undefined) overwrites.push({ channelId: id, targetType, targetId, allow: o.allow, deny: o.deny });
      }
    }),
  );
  const dmChannels = world.dms.map((dm) => ({ id: nextId(), members: dm.members.map((u) => users[u]!) }));
  for (const dm of dmChannels) channels.push({ id: dm.id, serverId: null, type: dm.members.length === 2 ? 'dm' : 'group_dm' });

  const hour = 3_600_000;
  const untilDate = { never: null, past: new Date(now.getTime() - hour), future: new Date(now.getTime() + hour) } as const;
  const notificationSettings: NotificationSettingRow[] = world.mutes.map((m) => ({
    userId: users[m.user]!,
    ...('channel' in m.scope
      ? { scopeType: 'channel' as const, scopeId: channels[m.scope.channel % channels.length]!.id }
      : { scopeType: 'server' as const, scopeId: serverIds[m.scope.server]! }),
    muted: m.muted,
    muteUntil: untilDate[m.until],
  }));

  const data: HostData = {
    servers: world.servers.map((s, i) => ({ id: serverIds[i]!, ownerId: users[s.owner]! })),
    serverMembers: world.servers.flatMap((s, i) => s.members.map((u) => ({ serverId: serverIds[i]!, userId: users[u]! }))),
    roles,
    memberRoles: uniqueBy(memberRoles, (mr) => `${mr.serverId}/${mr.userId}/${mr.roleId}`),
    channels,
    channelMembers: dmChannels.flatMap((dm) => dm.members.map((userId) => ({ channelId: dm.id, userId }))),
    overwrites: uniqueBy(overwrites, (o) => `${o.channelId}/${o.targetType}/${o.targetId}`),
    notificationSettings: uniqueBy(notificationSettings, (s) => `${s.userId}/${s.scopeType}/${s.scopeId}`),
  };
  const messages = channels.map((c, i) => ({ channelId: c.id, authorId: users[world.authors[i % world.authors.length]!]! }));
  return { data, messages };
}

/** The first of each key: a table's primary key admits one row. */
function uniqueBy<T>(rows: readonly T[], key: (row: T) => string): T[] {
  const seen = new Set<string>();
  return rows.filter((row) => !seen.has(key(row)) && seen.add(key(row)));
}

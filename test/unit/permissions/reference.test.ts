/**
 * The reference permission algorithm on the cases of docs/design.md, Recipients. Each
 * world is one server (id S, @everyone role id S) owned by `owner`, with one text channel C.
 */
import { describe, expect, it } from 'vitest';
import { ADMINISTRATOR, VIEW_CHANNEL } from '../../../src/permissions/flags.js';
import type { HostData, NotificationSettingRow, OverwriteRow, RoleRow } from '../../../src/permissions/host-data.js';
import { channelViewers, messageRecipients } from '../../../src/permissions/reference.js';

const S = '100';
const C = '200';
const DM = '300';
const OTHER_SERVER = '900';
const [owner, alice, bob, carol] = ['1', '2', '3', '4'];
const SEND_MESSAGES = 1n << 11n;
const now = new Date('2026-10-15T12:00:00Z');

interface World {
  everyone?: bigint;
  roles?: readonly Omit<RoleRow, 'serverId' | 'position'>[];
  memberRoles?: Readonly<Record<string, readonly string[]>>;
  members?: readonly string[];
  overwrites?: readonly Omit<OverwriteRow, 'channelId'>[];
  mutes?: readonly NotificationSettingRow[];
  extraRoles?: readonly RoleRow[];
}

function world(w: World = {}): HostData {
  const members = w.members ?? [owner, alice, bob];
  return {
    servers: [
      { id: S, ownerId: owner },
      { id: OTHER_SERVER, ownerId: carol },
    ],
    serverMembers: [...members.map((userId) => ({ serverId: S, userId })), { serverId: OTHER_SERVER, userId: carol }],
    roles: [
      { id: S, serverId: S, permissions: w.everyone ?? VIEW_CHANNEL, position: 0 },
      ...(w.roles ?? []).map((r) => ({ ...r, serverId: S, position: 1 })),
      ...(w.extraRoles ?? []),
    ],
    memberRoles: Object.entries(w.memberRoles ?? {}).flatMap(([userId, roleIds]) => roleIds.map((roleId) => ({ serverId: S, userId, roleId }))),
    channels: [
      { id: C, serverId: S, type: 'text' },
      { id: DM, serverId: null, type: 'group_dm' },
    ],
    channelMembers: [alice, bob, carol].map((userId) => ({ channelId: DM, userId })),
    overwrites: (w.overwrites ?? []).map((o) => ({ ...o, channelId: C })),
    notificationSettings: w.mutes ?? [],
  };
}

const viewers = (data: HostData) => [...channelViewers(data, C)].sort();
const deny = (targetType: 'role' | 'member', targetId: string, bits = VIEW_CHANNEL): Omit<OverwriteRow, 'channelId'> => ({
  targetType,
  targetId,
  allow: 0n,
  deny: bits,
});
const allow = (targetType: 'role' | 'member', targetId: string, bits = VIEW_CHANNEL): Omit<OverwriteRow, 'channelId'> => ({
  targetType,
  targetId,
  allow: bits,
  deny: 0n,
});

describe('VIEW_CHANNEL in a server channel', () => {
  it('@everyone holding VIEW_CHANNEL lets every member see the channel', () => {
    expect(viewers(world())).toEqual([owner, alice, bob].sort());
  });

  it('without VIEW_CHANNEL anywhere only the owner sees it: the owner has everything', () => {
    expect(viewers(world({ everyone: SEND_MESSAGES }))).toEqual([owner]);
  });

  it('the owner sees a channel whose @everyone and member overwrites deny them', () => {
    expect(viewers(world({ overwrites: [deny('role', S), deny('member', owner)] }))).toEqual([owner]);
  });

  it('a role grants VIEW_CHANNEL that @everyone lacks', () => {
    const data = world({ everyone: 0n, roles: [{ id: '10', permissions: VIEW_CHANNEL }], memberRoles: { [alice]: ['10'] } });
    expect(viewers(data)).toEqual([owner, alice].sort());
  });

  it('ADMINISTRATOR from any role overrides every overwrite, member deny included', () => {
    const data = world({
      everyone: 0n,
      roles: [{ id: '10', permissions: ADMINISTRATOR }],
      memberRoles: { [alice]: ['10'] },
      overwrites: [deny('role', S), deny('role', '10'), deny('member', alice)],
    });
    expect(viewers(data)).toEqual([owner, alice].sort());
  });

  it('ADMINISTRATOR on @everyone makes everyone an administrator', () => {
    expect(viewers(world({ everyone: ADMINISTRATOR, overwrites: [deny('role', S)] }))).toEqual([owner, alice, bob].sort());
  });

  it('an ADMINISTRATOR granted only by an overwrite grants nothing beyond that overwrite', () => {
    const data = world({ everyone: 0n, overwrites: [allow('member', alice, ADMINISTRATOR)] });
    expect(viewers(data)).toEqual([owner]);
  });

  it('the @everyone overwrite denies, a role overwrite re-allows', () => {
    const data = world({
      roles: [{ id: '10', permissions: 0n }],
      memberRoles: { [alice]: ['10'] },
      overwrites: [deny('role', S), allow('role', '10')],
    });
    expect(viewers(data)).toEqual([owner, alice].sort());
  });

  it('role overwrites are a union, and allow wins over deny among them', () => {
    const data = world({
      roles: [
        { id: '10', permissions: 0n },
        { id: '11', permissions: 0n },
      ],
      memberRoles: { [alice]: ['10', '11'], [bob]: ['10'] },
      overwrites: [deny('role', '10'), allow('role', '11')],
    });
    expect(viewers(data)).toEqual([owner, alice].sort());
  });

  it('a role overwrite allow beats the @everyone overwrite deny even when the same role also denies', () => {
    const data = world({
      roles: [{ id: '10', permissions: 0n }],
      memberRoles: { [alice]: ['10'] },
      overwrites: [deny('role', S), { targetType: 'role', targetId: '10', allow: VIEW_CHANNEL, deny: VIEW_CHANNEL }],
    });
    expect(viewers(data)).toEqual([owner, alice].sort());
  });

  it('a member overwrite deny beats a role overwrite allow', () => {
    const data = world({
      roles: [{ id: '10', permissions: VIEW_CHANNEL }],
      memberRoles: { [alice]: ['10'] },
      overwrites: [allow('role', '10'), deny('member', alice)],
    });
    expect(viewers(data)).toEqual([owner, bob].sort());
  });

  it('a member overwrite allow beats @everyone and role denies', () => {
    const data = world({
      roles: [{ id: '10', permissions: 0n }],
      memberRoles: { [alice]: ['10'] },
      overwrites: [deny('role', S), deny('role', '10'), allow('member', alice)],
    });
    expect(viewers(data)).toEqual([owner, alice].sort());
  });

  it('an overwrite for a role the member does not hold changes nothing for them', () => {
    const data = world({ roles: [{ id: '10', permissions: 0n }], memberRoles: { [alice]: ['10'] }, overwrites: [deny('role', '10')] });
    expect(viewers(data)).toEqual([owner, bob].sort());
  });

  it('overwrites touching other bits leave VIEW_CHANNEL alone', () => {
    expect(viewers(world({ overwrites: [deny('role', S, SEND_MESSAGES), deny('member', alice, SEND_MESSAGES)] }))).toEqual(
      [owner, alice, bob].sort(),
    );
  });

  it('a role of another server counts for nothing, neither its permissions nor its overwrites', () => {
    const foreign: RoleRow = { id: '20', serverId: OTHER_SERVER, permissions: ADMINISTRATOR | VIEW_CHANNEL, position: 1 };
    const data = world({ everyone: 0n, extraRoles: [foreign], memberRoles: { [alice]: ['20'] }, overwrites: [allow('role', '20')] });
    expect(viewers(data)).toEqual([owner]);
  });

  it('someone who is not a member of the server sees nothing, even with a member overwrite allowing them', () => {
    expect(viewers(world({ overwrites: [allow('member', carol)] }))).not.toContain(carol);
  });

  it('the sign bit of a 64-bit mask does not disturb the other bits', () => {
    const everythingButView = -1n & ~VIEW_CHANNEL & ~ADMINISTRATOR;
    expect(viewers(world({ everyone: everythingButView }))).toEqual([owner]);
    expect(viewers(world({ everyone: -1n & ~ADMINISTRATOR, overwrites: [deny('role', S, -1n)] }))).toEqual([owner]);
  });
});

describe('who a message wakes', () => {
  const liveMute = (userId: string, scopeType: 'server' | 'channel', scopeId: string, muteUntil: Date | null = null): NotificationSettingRow => ({
    userId,
    scopeType,
    scopeId,
    muted: true,
    muteUntil,
  });

  it('a server channel wakes its viewers except the author', () => {
    expect([...messageRecipients(world(), { channelId: C, authorId: alice }, now)].sort()).toEqual([owner, bob].sort());
  });

  it('a group DM wakes its members except the author, whatever the server permissions say', () => {
    expect([...messageRecipients(world({ everyone: 0n }), { channelId: DM, authorId: alice }, now)].sort()).toEqual([bob, carol].sort());
  });

  it('a denied member is not woken', () => {
    expect(messageRecipients(world({ overwrites: [deny('member', bob)] }), { channelId: C, authorId: alice }, now)).not.toContain(bob);
  });

  it('a live mute on the channel or on its server silences; an expired or lifted one does not', () => {
    const hourAgo = new Date(now.getTime() - 3_600_000);
    const inAnHour = new Date(now.getTime() + 3_600_000);
    const mutes = [liveMute(owner, 'channel', C, inAnHour), liveMute(bob, 'server', S), liveMute(alice, 'server', S, hourAgo)];
    const data = world({ members: [owner, alice, bob, carol], mutes: [...mutes, { ...liveMute(carol, 'channel', C), muted: false }] });
    expect([...messageRecipients(data, { channelId: C, authorId: '999' }, now)].sort()).toEqual([alice, carol].sort());
  });

  it('a mute on another channel or server does not silence this one', () => {
    const data = world({ mutes: [liveMute(bob, 'channel', DM), liveMute(bob, 'server', OTHER_SERVER)] });
    expect(messageRecipients(data, { channelId: C, authorId: alice }, now)).toContain(bob);
  });

  it('a DM is silenced by a mute on the DM channel only', () => {
    const data = world({ mutes: [liveMute(bob, 'channel', DM), liveMute(carol, 'server', S)] });
    expect([...messageRecipients(data, { channelId: DM, authorId: alice }, now)]).toEqual([carol]);
  });

  it('a channel that does not exist wakes nobody', () => {
    expect(messageRecipients(world(), { channelId: '404', authorId: alice }, now).size).toBe(0);
  });
});

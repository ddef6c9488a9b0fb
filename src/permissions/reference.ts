/**
 * The reference for who may see a channel and who a message wakes (docs/design.md, Host tables and Recipients),
 * written the way docs/design.md states it, one step per line, over plain rows. Production
 * resolves the same thing in SQL (src/db/permissions.ts, src/bridge/recipients.ts); a
 * differential property test holds the two equal. Nothing here is on a hot path: clarity
 * over speed.
 */
import { ADMINISTRATOR, ALL_PERMISSIONS, VIEW_CHANNEL } from './flags.js';
import { isDirectChannel, type ChannelRow, type HostData, type OverwriteRow } from './host-data.js';

/**
 * A member's permissions in a server channel, by Discord's algorithm: the owner has
 * everything; otherwise base = @everyone | the member's roles; ADMINISTRATOR ⇒ everything;
 * else apply the channel's @everyone overwrite, then the union of its role overwrites for
 * the member's roles (deny, then allow), then its member overwrite (deny, then allow).
 * Someone who is not a member of the server has none.
 */
export function channelPermissions(data: HostData, channel: ChannelRow, userId: string): bigint {
  const server = data.servers.find((s) => s.id === channel.serverId);
  if (server === undefined || !isServerMember(data, server.id, userId)) return 0n;
  if (server.ownerId === userId) return ALL_PERMISSIONS;

  const everyone = data.roles.find((r) => r.id === server.id && r.serverId === server.id);
  const held = heldRoleIds(data, server.id, userId);
  let permissions = everyone?.permissions ?? 0n;
  for (const role of data.roles) if (held.has(role.id)) permissions |= role.permissions;
  if ((permissions & ADMINISTRATOR) !== 0n) return ALL_PERMISSIONS;

  const overwrites = data.overwrites.filter((o) => o.channelId === channel.id);
  const everyoneOverwrite = overwrites.find((o) => o.targetType === 'role' && o.targetId === server.id);
  permissions = applyOverwrite(permissions, everyoneOverwrite);

  const roleOverwrites = overwrites.filter((o) => o.targetType === 'role' && held.has(o.targetId));
  permissions = applyOverwrite(permissions, {
    allow: roleOverwrites.reduce((bits, o) => bits | o.allow, 0n),
    deny: roleOverwrites.reduce((bits, o) => bits | o.deny, 0n),
  });

  const memberOverwrite = overwrites.find((o) => o.targetType === 'member' && o.targetId === userId);
  return applyOverwrite(permissions, memberOverwrite);
}

/** Whether `userId` may see the channel: DM membership, or VIEW_CHANNEL in a server channel. */
export function canViewChannel(data: HostData, channel: ChannelRow, userId: string): boolean {
  if (isDirectChannel(channel.type)) return data.channelMembers.some((m) => m.channelId === channel.id && m.userId === userId);
  if (channel.serverId === null) return false; // a server channel type without a server: nobody
  return (channelPermissions(data, channel, userId) & VIEW_CHANNEL) !== 0n;
}

/** Everyone who may see the channel (the candidates are its DM members or its server's members). */
export function channelViewers(data: HostData, channelId: string): Set<string> {
  const channel = data.channels.find((c) => c.id === channelId);
  if (channel === undefined) return new Set();
  const candidates = isDirectChannel(channel.type)
    ? data.channelMembers.filter((m) => m.channelId === channel.id).map((m) => m.userId)
    : data.serverMembers.filter((m) => m.serverId === channel.serverId).map((m) => m.userId);
  return new Set(candidates.filter((userId) => canViewChannel(data, channel, userId)));
}

/** A live mute: `muted AND (mute_until IS NULL OR mute_until > now)`, on the channel or its server. */
export function hasLiveMute(data: HostData, userId: string, channel: ChannelRow, now: Date): boolean {
  const serverId = isDirectChannel(channel.type) ? null : channel.serverId;
  return data.notificationSettings.some(
    (s) =>
      s.userId === userId &&
      s.muted &&
      (s.muteUntil === null || s.muteUntil.getTime() > now.getTime()) &&
      ((s.scopeType === 'channel' && s.scopeId === channel.id) || (s.scopeType === 'server' && s.scopeId === serverId)),
  );
}

export interface MessageRef {
  readonly channelId: string;
  readonly authorId: string;
}

/** Who a message wakes (docs/design.md, Recipients): the channel's viewers except the author, minus live mutes. */
export function messageRecipients(data: HostData, message: MessageRef, now: Date): Set<string> {
  const channel = data.channels.find((c) => c.id === message.channelId);
  if (channel === undefined) return new Set();
  const viewers = [...channelViewers(data, channel.id)];
  return new Set(viewers.filter((userId) => userId !== message.authorId && !hasLiveMute(data, userId, channel, now)));
}

function isServerMember(data: HostData, serverId: string, userId: string): boolean {
  return data.serverMembers.some((m) => m.serverId === serverId && m.userId === userId);
}

/** The member's roles other than @everyone; a role that belongs to another server counts for nothing. */
function heldRoleIds(data: HostData, serverId: string, userId: string): Set<string> {
  const ofServer = new Set(data.roles.filter((r) => r.serverId === serverId && r.id !== serverId).map((r) => r.id));
  return new Set(data.memberRoles.filter((mr) => mr.serverId === serverId && mr.userId === userId && ofServer.has(mr.roleId)).map((mr) => mr.roleId));
}

function applyOverwrite(permissions: bigint, overwrite: Pick<OverwriteRow, 'allow' | 'deny'> | undefined): bigint {
  if (overwrite === undefined) return permissions;
  return (permissions & ~overwrite.deny) | overwrite.allow;
}

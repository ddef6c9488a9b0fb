/**
 * The host tables (docs/design.md, Host tables) that decide who sees a channel, as plain rows. Ids are
 * decimal strings (as slonik returns `int8`), permission masks signed 64-bit bigints (as
 * PostgreSQL stores them). The pure reference reads this; test fixtures write it.
 */
export type ChannelType = 'text' | 'voice' | 'dm' | 'group_dm';

export interface ServerRow {
  readonly id: string;
  readonly ownerId: string;
}

export interface ServerMemberRow {
  readonly serverId: string;
  readonly userId: string;
}

/** The @everyone role of a server has `id` = the server's id. */
export interface RoleRow {
  readonly id: string;
  readonly serverId: string;
  readonly permissions: bigint;
  readonly position: number;
}

export interface MemberRoleRow {
  readonly serverId: string;
  readonly userId: string;
  readonly roleId: string;
}

export interface ChannelRow {
  readonly id: string;
  readonly serverId: string | null;
  readonly type: ChannelType;
}

export interface ChannelMemberRow {
  readonly channelId: string;
  readonly userId: string;
}

export interface OverwriteRow {
  readonly channelId: string;
  readonly targetType: 'role' | 'member';
  readonly targetId: string;
  readonly allow: bigint;
  readonly deny: bigint;
}

export interface NotificationSettingRow {
  readonly userId: string;
  readonly scopeType: 'server' | 'channel';
  readonly scopeId: string;
  readonly muted: boolean;
  readonly muteUntil: Date | null;
}

export interface HostData {
  readonly servers: readonly ServerRow[];
  readonly serverMembers: readonly ServerMemberRow[];
  readonly roles: readonly RoleRow[];
  readonly memberRoles: readonly MemberRoleRow[];
  readonly channels: readonly ChannelRow[];
  readonly channelMembers: readonly ChannelMemberRow[];
  readonly overwrites: readonly OverwriteRow[];
  readonly notificationSettings: readonly NotificationSettingRow[];
}

export function isDirectChannel(type: ChannelType): boolean {
  return type === 'dm' || type === 'group_dm';
}

/**
 * Who a message wakes (docs/design.md, Recipients), in SQL: the channel's viewers except the
 * author, minus anyone with a live mute on the channel or — for a server channel — its server.
 * src/permissions/reference.ts `messageRecipients` is the same rule in TypeScript.
 */
import { sql, type FragmentSqlToken } from 'slonik';
import { channelViewers } from '../db/permissions.js';

export interface MessageRef {
  readonly channelId: string;
  readonly authorId: string;
  /** The channel's server as just read from `channels` (null for a DM): a planning hint, see `channelViewers`. */
  readonly serverId?: string | null;
}

/**
 * A fragment yielding `(user_id, is_dm)`: whoever a message in the channel wakes, its author
 * aside — the viewers without a live mute. The author is excluded per message by the caller.
 * `serverId`: the channel's server when the caller has just read it (see `channelViewers`).
 */
export function channelRecipients(channelId: string, serverId?: string | null): FragmentSqlToken {
  // The scopes as constants where known: a large channel's mutes are then found with one pass
  // that keeps only this channel's and this server's, not hashed for every scope.
  const server = typeof serverId === 'string' ? sql.fragment`${serverId}::int8` : sql.fragment`viewer.server_id`;
  return sql.fragment`
    SELECT viewer.user_id, viewer.is_dm
    FROM (${channelViewers([channelId], undefined, serverId ?? undefined)}) viewer
    -- One probe of the host's primary key (user_id, …) per viewer: a cost that follows the
    -- message's audience, never a scan of everyone's settings.
    LEFT JOIN LATERAL (
      SELECT TRUE AS live FROM notification_settings ns
      WHERE ns.user_id = viewer.user_id
        AND ns.muted AND (ns.mute_until IS NULL OR ns.mute_until > now())
        AND ((ns.scope_type = 'channel' AND ns.scope_id = ${channelId}::int8)
          OR (ns.scope_type = 'server' AND ns.scope_id = ${server}))
      LIMIT 1
    ) mute ON TRUE
    WHERE mute.live IS NULL
  `;
}

/** A fragment yielding `(user_id, is_dm)`, one row per recipient of one message. */
export function messageRecipients(message: MessageRef): FragmentSqlToken {
  return sql.fragment`
    SELECT recipient.user_id, recipient.is_dm
    FROM (${channelRecipients(message.channelId, message.serverId)}) recipient
    WHERE recipient.user_id <> ${message.authorId}
  `;
}

/**
 * Who a message wakes (design §3), in SQL: the channel's viewers (contract §4) except the
 * author, minus anyone with a live mute on the channel or — for a server channel — its server.
 * src/permissions/reference.ts `messageRecipients` is the same rule in TypeScript.
 */
import { sql, type FragmentSqlToken } from 'slonik';
import { channelViewers } from '../db/permissions.js';

export interface MessageRef {
  readonly channelId: string;
  readonly authorId: string;
}

/**
 * A fragment yielding `(user_id, is_dm)`: whoever a message in the channel wakes, its author
 * aside — the viewers without a live mute. The author is excluded per message by the caller.
 */
export function channelRecipients(channelId: string): FragmentSqlToken {
  return sql.fragment`
    SELECT viewer.user_id, viewer.is_dm
    FROM (${channelViewers([channelId])}) viewer
    WHERE NOT EXISTS (
      SELECT 1 FROM notification_settings ns
      WHERE ns.user_id = viewer.user_id
        AND ns.muted AND (ns.mute_until IS NULL OR ns.mute_until > now())
        AND ((ns.scope_type = 'channel' AND ns.scope_id = viewer.channel_id)
          OR (ns.scope_type = 'server' AND ns.scope_id = viewer.server_id))
    )
  `;
}

/** A fragment yielding `(user_id, is_dm)`, one row per recipient of one message. */
export function messageRecipients(message: MessageRef): FragmentSqlToken {
  return sql.fragment`
    SELECT recipient.user_id, recipient.is_dm
    FROM (${channelRecipients(message.channelId)}) recipient
    WHERE recipient.user_id <> ${message.authorId}
  `;
}

/**
 * Who may see a channel (contract §4), in SQL, set-based: the one implementation used by the
 * bridge (recipients of a message) and by the drain (re-check before revealing a channel).
 * src/permissions/reference.ts states the same rules in TypeScript; a differential property
 * test over random servers holds the two equal.
 *
 * DM / group DM: the channel's members. Server channel: members of its server who hold
 * VIEW_CHANNEL by Discord's algorithm — the owner has everything; otherwise base = @everyone
 * role | the member's roles; ADMINISTRATOR ⇒ everything; else apply, in order, the channel's
 * @everyone overwrite, the union of its role overwrites for the member's roles (deny, then
 * allow), then its member overwrite (deny, then allow). A role counts only in its own server.
 */
import { sql, type FragmentSqlToken } from 'slonik';
import { ADMINISTRATOR, VIEW_CHANNEL } from '../permissions/flags.js';

export { ADMINISTRATOR, VIEW_CHANNEL } from '../permissions/flags.js';

/**
 * A query fragment yielding rows `(channel_id, server_id, user_id, is_dm)`: every user who may
 * see one of `channelIds`, optionally only `userId`; one row per (channel, user). `server_id`
 * is NULL for DMs. Channels that do not exist yield nothing.
 */
export function channelViewers(channelIds: readonly string[], userId?: string): FragmentSqlToken {
  const channels = sql.array(channelIds, 'int8');
  return sql.fragment`
    SELECT c.id AS channel_id, NULL::int8 AS server_id, cm.user_id, TRUE AS is_dm
    FROM channels c
    JOIN channel_members cm ON cm.channel_id = c.id
    WHERE c.id = ANY(${channels}) AND c.type IN ('dm', 'group_dm')
      AND ${onlyUser(sql.fragment`cm.user_id`, userId)}
    UNION ALL
    SELECT channel_id, server_id, user_id, FALSE AS is_dm
    FROM (
      SELECT c.id AS channel_id, c.server_id, sm.user_id, s.owner_id,
        COALESCE(everyone.permissions, 0) | COALESCE(held.permissions, 0) AS base,
        COALESCE(everyone_ow.allow, 0) AS everyone_allow, COALESCE(everyone_ow.deny, 0) AS everyone_deny,
        COALESCE(role_ow.allow, 0) AS roles_allow, COALESCE(role_ow.deny, 0) AS roles_deny,
        COALESCE(member_ow.allow, 0) AS member_allow, COALESCE(member_ow.deny, 0) AS member_deny
      FROM channels c
      JOIN servers s ON s.id = c.server_id
      JOIN server_members sm ON sm.server_id = c.server_id
      -- @everyone: the role whose id is the server's
      LEFT JOIN roles everyone ON everyone.id = c.server_id AND everyone.server_id = c.server_id
      -- the member's other roles, of this server only
      LEFT JOIN LATERAL (
        SELECT bit_or(r.permissions) AS permissions
        FROM member_roles mr JOIN roles r ON r.id = mr.role_id AND r.server_id = c.server_id
        WHERE mr.server_id = c.server_id AND mr.user_id = sm.user_id AND r.id <> c.server_id
      ) held ON TRUE
      LEFT JOIN permission_overwrites everyone_ow
        ON everyone_ow.channel_id = c.id AND everyone_ow.target_type = 'role' AND everyone_ow.target_id = c.server_id
      -- the union of the channel's overwrites for those roles
      LEFT JOIN LATERAL (
        SELECT bit_or(po.allow) AS allow, bit_or(po.deny) AS deny
        FROM member_roles mr
        JOIN roles r ON r.id = mr.role_id AND r.server_id = c.server_id
        JOIN permission_overwrites po ON po.channel_id = c.id AND po.target_type = 'role' AND po.target_id = mr.role_id
        WHERE mr.server_id = c.server_id AND mr.user_id = sm.user_id AND r.id <> c.server_id
      ) role_ow ON TRUE
      LEFT JOIN permission_overwrites member_ow
        ON member_ow.channel_id = c.id AND member_ow.target_type = 'member' AND member_ow.target_id = sm.user_id
      WHERE c.id = ANY(${channels}) AND c.type NOT IN ('dm', 'group_dm')
        AND ${onlyUser(sql.fragment`sm.user_id`, userId)}
    ) resolved
    WHERE owner_id = user_id
      OR (base & ${ADMINISTRATOR.toString()}::int8) <> 0
      OR ((((((base & ~everyone_deny) | everyone_allow) & ~roles_deny) | roles_allow) & ~member_deny) | member_allow)
         & ${VIEW_CHANNEL.toString()}::int8 <> 0
  `;
}

function onlyUser(column: FragmentSqlToken, userId: string | undefined): FragmentSqlToken {
  return userId === undefined ? sql.fragment`TRUE` : sql.fragment`${column} = ${userId}`;
}

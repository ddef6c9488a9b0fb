/**
 * Who may see a channel (docs/design.md, Recipients), in SQL, set-based: the one implementation used by the
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
 *
 * `serverId`, when given, is the server every one of `channelIds` belongs to, as the caller
 * just read it from `channels` (a channel of another server, or a DM, then yields nobody). It
 * changes no answer the caller can get: it lets PostgreSQL plan for that server's size — a
 * server of 100,000 members is then resolved with scans and merges, not planned as an average
 * one — and leaves the DM half out.
 *
 * Set-based for any size: the server's members, their roles (one pass over the server's
 * `member_roles`, grouped by member) and the channel's overwrites are joined on their keys;
 * no per-member subquery.
 */
export function channelViewers(channelIds: readonly string[], userId?: string, serverId?: string): FragmentSqlToken {
  const channels = sql.array(channelIds, 'int8');
  const ofServer = serverId === undefined ? sql.fragment`TRUE` : sql.fragment`mc.server_id = ${serverId}`;
  // With the server given the channels are server channels: the DM half has nothing to find.
  const dms =
    serverId === undefined
      ? sql.fragment`
    SELECT c.id AS channel_id, NULL::int8 AS server_id, cm.user_id, TRUE AS is_dm
    FROM channels c
    JOIN channel_members cm ON cm.channel_id = c.id
    WHERE c.id = ANY(${channels}) AND c.type IN ('dm', 'group_dm')
      AND ${onlyUser(sql.fragment`cm.user_id`, userId)}
    UNION ALL`
      : sql.fragment``;
  return sql.fragment`${dms}
    SELECT mc.id AS channel_id, sm.server_id, sm.user_id, FALSE AS is_dm
    FROM channels mc
    JOIN servers s ON s.id = mc.server_id
    -- @everyone: the role whose id is the server's
    LEFT JOIN roles everyone ON everyone.id = mc.server_id AND everyone.server_id = mc.server_id
    LEFT JOIN permission_overwrites everyone_ow
      ON everyone_ow.channel_id = mc.id AND everyone_ow.target_type = 'role' AND everyone_ow.target_id = mc.server_id
    JOIN server_members sm ON sm.server_id = mc.server_id
    -- the member's other roles, of this server only, and the channel's overwrites for them
    LEFT JOIN (member_roles mr JOIN roles r ON r.id = mr.role_id AND r.server_id = mr.server_id AND r.id <> mr.server_id)
      ON mr.server_id = sm.server_id AND mr.user_id = sm.user_id
    LEFT JOIN permission_overwrites role_ow
      ON role_ow.channel_id = mc.id AND role_ow.target_type = 'role' AND role_ow.target_id = r.id AND role_ow.channel_id = ANY(${channels})
    LEFT JOIN permission_overwrites member_ow
      ON member_ow.channel_id = mc.id AND member_ow.target_type = 'member' AND member_ow.target_id = sm.user_id
        AND member_ow.channel_id = ANY(${channels})
    WHERE mc.id = ANY(${channels}) AND mc.type NOT IN ('dm', 'group_dm') AND ${ofServer}
      AND ${onlyUser(sql.fragment`sm.user_id`, userId)}
    -- One group per (channel, member). What is fixed per channel (owner, @everyone and its
    -- overwrite) or per member (the member overwrite) is the same on every row of a group, so
    -- its bit_or is itself; the roles' permissions and overwrites are unions.
    GROUP BY sm.server_id, sm.user_id, mc.id
    HAVING bool_or(s.owner_id = sm.user_id)
      OR ((COALESCE(bit_or(everyone.permissions), 0) | COALESCE(bit_or(r.permissions), 0)) & ${ADMINISTRATOR.toString()}::int8) <> 0
      OR (((((((COALESCE(bit_or(everyone.permissions), 0) | COALESCE(bit_or(r.permissions), 0))
                & ~COALESCE(bit_or(everyone_ow.deny), 0)) | COALESCE(bit_or(everyone_ow.allow), 0))
              & ~COALESCE(bit_or(role_ow.deny), 0)) | COALESCE(bit_or(role_ow.allow), 0))
            & ~COALESCE(bit_or(member_ow.deny), 0)) | COALESCE(bit_or(member_ow.allow), 0))
         & ${VIEW_CHANNEL.toString()}::int8 <> 0
  `;
}

function onlyUser(column: FragmentSqlToken, userId: string | undefined): FragmentSqlToken {
  return userId === undefined ? sql.fragment`TRUE` : sql.fragment`${column} = ${userId}`;
}

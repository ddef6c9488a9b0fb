/**
 * The demo's world, written straight into the host stand-in tables (migrations/host/000001)
 * — in a real deployment the chat server owns these rows:
 *
 *   users     alice (who writes), bob, carol, dave, erin
 *   server    "Zipp HQ", owned by alice; @everyone may VIEW_CHANNEL
 *   role      "crew": bob, carol, erin
 *   channel   #crew: an overwrite denies @everyone VIEW_CHANNEL, another allows the crew role
 *   DM        alice ↔ bob
 *   mute      erin muted #crew
 *   sessions  one live refresh_tokens row per phone, and one per person for a device called
 *             `my-phone` (README: `simulate-device --device my-phone`): the api registers only a
 *             device with a live session, and maintenance prunes a registration without one
 *
 * Every run gets fresh snowflake ids; a previous run's world is removed first (its
 * registrations the way the api deletes them, so their workflows end).
 */
import type { Client } from '@temporalio/client';
import { sql } from 'slonik';
import { z } from 'zod';
import type { DatabasePool } from '../../src/db/pool.js';
import { VIEW_CHANNEL } from '../../src/permissions/flags.js';
import { signalDeleted } from '../../temporal/registration-workflows.js';

/** The device id the README's `simulate-device` line uses; each demo person has a session for it. */
export const myPhone = 'my-phone';

export const demoPeople = ['alice', 'bob', 'carol', 'dave', 'erin'] as const;
export type DemoPerson = (typeof demoPeople)[number];

export interface DemoWorld {
  readonly run: string;
  readonly users: Readonly<Record<DemoPerson, string>>;
  readonly serverId: string;
  readonly crewRoleId: string;
  readonly crewChannelId: string;
  readonly dmChannelId: string;
  /** Channel id → how people call it. */
  readonly channelNames: ReadonlyMap<string, string>;
  /** Live mutes, as the phones know them: `${userId}:${channelId}`. */
  readonly mutes: ReadonlySet<string>;
}

/** Snowflake-like ids, unique per run: milliseconds × 10⁶ plus a counter (well inside int8). */
export function idGenerator(): () => string {
  const base = BigInt(Date.now()) * 1_000_000n;
  let counter = 0n;
  return () => (base + ++counter).toString();
}

export async function createDemoWorld(pool: DatabasePool, nextId: () => string, deviceIds: Readonly<Record<DemoPerson, string>>): Promise<DemoWorld> {
  const run = nextId();
  const users = Object.fromEntries(demoPeople.map((person) => [person, nextId()])) as Record<DemoPerson, string>;
  const [serverId, crewRoleId, crewChannelId, dmChannelId] = [nextId(), nextId(), nextId(), nextId()];
  await pool.transaction(async (tx) => {
    for (const person of demoPeople)
      await tx.query(sql.unsafe`INSERT INTO users (id, username) VALUES (${users[person]}, ${`demo-${run}-${person}`})`);
    await tx.query(sql.unsafe`INSERT INTO servers (id, owner_id, name) VALUES (${serverId}, ${users.alice}, 'Zipp HQ')`);
    await tx.query(
      sql.unsafe`INSERT INTO roles (id, server_id, permissions, position) VALUES (${serverId}, ${serverId}, ${VIEW_CHANNEL.toString()}, 0), (${crewRoleId}, ${serverId}, 0, 1)`,
    );
    for (const person of demoPeople)
      await tx.query(sql.unsafe`INSERT INTO server_members (server_id, user_id) VALUES (${serverId}, ${users[person]})`);
    for (const person of ['bob', 'carol', 'erin'] as const) {
      await tx.query(sql.unsafe`INSERT INTO member_roles (server_id, user_id, role_id) VALUES (${serverId}, ${users[person]}, ${crewRoleId})`);
    }
    await tx.query(
      sql.unsafe`INSERT INTO channels (id, server_id, type) VALUES (${crewChannelId}, ${serverId}, 'text'), (${dmChannelId}, NULL, 'dm')`,
    );
    await tx.query(sql.unsafe`
      INSERT INTO permission_overwrites (channel_id, target_type, target_id, allow, deny)
      VALUES (${crewChannelId}, 'role', ${serverId}, 0, ${VIEW_CHANNEL.toString()}),
             (${crewChannelId}, 'role', ${crewRoleId}, ${VIEW_CHANNEL.toString()}, 0)`);
    await tx.query(
      sql.unsafe`INSERT INTO channel_members (channel_id, user_id) VALUES (${dmChannelId}, ${users.alice}), (${dmChannelId}, ${users.bob})`,
    );
    await tx.query(
      sql.unsafe`INSERT INTO notification_settings (user_id, scope_type, scope_id, muted, mute_until) VALUES (${users.erin}, 'channel', ${crewChannelId}, true, NULL)`,
    );
    for (const person of demoPeople) {
      await tx.query(sql.unsafe`
        INSERT INTO refresh_tokens (user_id, device_id, expires_at)
        VALUES (${users[person]}, ${deviceIds[person]}, now() + interval '1 day'), (${users[person]}, ${myPhone}, now() + interval '1 day')`);
    }
  });
  return {
    run,
    users,
    serverId,
    crewRoleId,
    crewChannelId,
    dmChannelId,
    channelNames: new Map([
      [crewChannelId, '#crew'],
      [dmChannelId, 'DM alice ↔ bob'],
    ]),
    mutes: new Set([`${users.erin}:${crewChannelId}`]),
  };
}

const demoDevice = z.object({ user_id: z.string(), device_id: z.string() });

/** Removes the worlds of earlier runs; returns how many registrations went with them. */
export async function removeEarlierDemoWorlds(pool: DatabasePool, temporal: Client): Promise<number> {
  const registrations = await pool.any(sql.type(demoDevice)`
    DELETE FROM push_registrations r USING users u
    WHERE u.id = r.user_id AND u.username LIKE 'demo-%'
    RETURNING r.user_id, r.device_id`);
  await pool.transaction(async (tx) => {
    await tx.query(sql.unsafe`
      DELETE FROM channels WHERE server_id IS NULL AND id IN (
        SELECT cm.channel_id FROM channel_members cm JOIN users u ON u.id = cm.user_id WHERE u.username LIKE 'demo-%')`);
    await tx.query(sql.unsafe`DELETE FROM servers s USING users u WHERE u.id = s.owner_id AND u.username LIKE 'demo-%'`);
    await tx.query(sql.unsafe`DELETE FROM users WHERE username LIKE 'demo-%'`);
  });
  // Best effort: a workflow missed here finds its registration gone at its next look.
  await Promise.allSettled(registrations.map((r) => signalDeleted(temporal, { userId: r.user_id, deviceId: r.device_id })));
  return registrations.length;
}

/**
 * The host world of a fault scenario, seeded into the host tables: users with
 * one device each and a live session, two overlapping servers whose @everyone role may view
 * every channel, two text channels each, a few DMs and a group DM. Who receives a message is
 * therefore simply "every member of the channel but its author" — the permission rules have
 * their own tests; here the world only has to make the fan-out wide and known in advance.
 */
import { sql, type DatabasePool } from 'slonik';
import { VIEW_CHANNEL } from '../../src/permissions/flags.js';
import { hostFixtures } from '../support/host-fixtures.js';
import type { Random } from './random.js';

export interface World {
  readonly users: readonly string[];
  readonly devices: readonly { readonly userId: string; readonly deviceId: string }[];
  /** Channel id → its members. */
  readonly channels: ReadonlyMap<string, readonly string[]>;
}

export async function seedWorld(pool: DatabasePool, random: Random, userCount: number): Promise<World> {
  const host = hostFixtures(pool);
  const users = await host.users(userCount);
  const channels = new Map<string, readonly string[]>();
  // Two servers sharing the middle third of the users.
  const third = Math.floor(userCount / 3);
  for (const members of [users.slice(0, 2 * third), users.slice(third)]) {
    const server = await host.server({ owner: members[0]!, everyone: VIEW_CHANNEL, members: members.slice(1) });
    for (let i = 0; i < 2; i++) channels.set(await host.channel(server), members);
  }
  for (let i = 0; i < 4; i++) {
    const [a, b] = random.shuffle(users);
    channels.set(await host.dm([a!, b!]), [a!, b!]);
  }
  const group = random.shuffle(users).slice(0, 4);
  channels.set(await host.dm(group), group);

  const devices = users.map((userId) => ({ userId, deviceId: `phone-${userId}` }));
  for (const { userId, deviceId } of devices) {
    // A live session: maintenance would prune a registration without one.
    await pool.query(
      sql.unsafe`INSERT INTO refresh_tokens (user_id, device_id, expires_at) VALUES (${userId}, ${deviceId}, now() + interval '1 day')`,
    );
  }
  return { users, devices, channels };
}

export interface MessageEventBody {
  readonly id: string;
  readonly channel_id: string;
  readonly author_id: string;
  readonly created_at: string;
}

/** Messages each user should see counted, per channel: every message of their channels they did not write. */
export function expectedCounts(world: World, events: readonly MessageEventBody[]): Map<string, Map<string, number>> {
  const expected = new Map<string, Map<string, number>>(world.users.map((u) => [u, new Map()]));
  for (const event of events) {
    for (const member of world.channels.get(event.channel_id) ?? []) {
      if (member === event.author_id) continue;
      const perChannel = expected.get(member)!;
      perChannel.set(event.channel_id, (perChannel.get(event.channel_id) ?? 0) + 1);
    }
  }
  return expected;
}

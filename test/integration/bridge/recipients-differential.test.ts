/**
 * Differential property test: over random servers, the SQL that decides who sees a channel
 * (`channelViewers`, also used by the drain) and who a message wakes (`messageRecipients`,
 * the bridge's) give exactly the sets the pure TypeScript reference gives — in every form
 * production asks: all viewers of several channels, one user's channels (the drain's
 * question), and a message's recipients with and without the channel's server given (the
 * bridge gives it, as read from `channels`, so that PostgreSQL plans for the server's size).
 */
import fc from 'fast-check';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { messageRecipients } from '../../../src/bridge/recipients.js';
import { channelViewers } from '../../../src/db/permissions.js';
import * as reference from '../../../src/permissions/reference.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { hostFixtures, type HostFixtures } from '../../support/host-fixtures.js';
import { abstractWorld, materialize, SERVERS_PER_WORLD, type ConcreteWorld } from './random-host.js';

const WORLDS = 500; // × SERVERS_PER_WORLD = 1,000 random servers

let db: TestDatabase;
let host: HostFixtures;
beforeAll(async () => {
  db = await freshDatabase();
  host = hostFixtures(db.pool);
});
afterAll(async () => {
  await db.drop();
});

const viewerRow = z.object({ channel_id: z.string(), user_id: z.string() });
const recipientRow = z.object({ user_id: z.string() });

async function sqlViewers(world: ConcreteWorld): Promise<Map<string, string[]>> {
  const rows = await db.pool.any(sql.type(viewerRow)`SELECT channel_id, user_id FROM (${channelViewers(world.data.channels.map((c) => c.id))}) v`);
  const byChannel = new Map(world.data.channels.map((c) => [c.id, [] as string[]]));
  for (const row of rows) byChannel.get(row.channel_id)!.push(row.user_id);
  return new Map([...byChannel].map(([channel, users]) => [channel, users.sort()]));
}

async function sqlRecipients(message: { channelId: string; authorId: string; serverId?: string | null }): Promise<string[]> {
  const rows = await db.pool.any(sql.type(recipientRow)`SELECT user_id FROM (${messageRecipients(message)}) r`);
  return rows.map((r) => r.user_id).sort();
}

/** The drain's question: which of these channels may this one user see? */
async function sqlChannelsOf(world: ConcreteWorld, userId: string): Promise<string[]> {
  const rows = await db.pool.any(
    sql.type(viewerRow)`SELECT channel_id, user_id FROM (${channelViewers(
      world.data.channels.map((c) => c.id),
      userId,
    )}) v`,
  );
  expect(rows.every((r) => r.user_id === userId)).toBe(true);
  return rows.map((r) => r.channel_id).sort();
}

const sorted = (set: Set<string>) => [...set].sort();

describe('SQL recipients equal the TypeScript reference', () => {
  it(`on ${WORLDS * SERVERS_PER_WORLD} random servers (roles, owners, administrators, overwrites, mutes)`, async () => {
    let servers = 0;
    let nonTrivial = 0; // channels where someone is in and someone is out: the test exercises both sides
    await fc.assert(
      fc.asyncProperty(abstractWorld, async (abstract) => {
        const now = new Date();
        const world = materialize(abstract, now);
        await host.seed(world.data);
        servers += world.data.servers.length;

        const viewers = await sqlViewers(world);
        for (const channel of world.data.channels) {
          const expected = sorted(reference.channelViewers(world.data, channel.id));
          expect(viewers.get(channel.id), `viewers of ${channel.type} channel ${channel.id}`).toEqual(expected);
        }
        const users = [...new Set(world.data.serverMembers.map((m) => m.userId).concat(world.data.channelMembers.map((m) => m.userId)))];
        for (const user of users) {
          const expected = world.data.channels
            .filter((c) => reference.channelViewers(world.data, c.id).has(user))
            .map((c) => c.id)
            .sort();
          expect(await sqlChannelsOf(world, user), `channels user ${user} may see`).toEqual(expected);
        }
        for (const message of world.messages) {
          const expected = sorted(reference.messageRecipients(world.data, message, now));
          expect(await sqlRecipients(message), `recipients of a message by ${message.authorId} in ${message.channelId}`).toEqual(expected);
          const serverId = world.data.channels.find((c) => c.id === message.channelId)!.serverId;
          expect(await sqlRecipients({ ...message, serverId }), `the same, with the channel's server given`).toEqual(expected);
          const members = world.data.serverMembers.filter(
            (m) => m.serverId === world.data.channels.find((c) => c.id === message.channelId)?.serverId,
          );
          if (expected.length > 0 && expected.length < members.length - 1) nonTrivial++;
        }
      }),
      { numRuns: WORLDS },
    );
    expect(servers).toBe(WORLDS * SERVERS_PER_WORLD);
    // The generator is worth something only if permissions actually split members.
    expect(nonTrivial).toBeGreaterThan(WORLDS / 4);
  }, 300_000); // ~60 s on two quiet cores; several times that on a loaded machine

  it('a channel id that does not exist yields nobody', async () => {
    const [alice] = await host.users(1);
    expect(await sqlRecipients({ channelId: '1', authorId: alice! })).toEqual([]);
  });
});

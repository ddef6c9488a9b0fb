/**
 * A large channel fans out while its members log out and back in — the everyday churn of a
 * real instance — on the running product (api, worker, bridge, the local FCM stand-in): no
 * delivery of the channel's events fails because a registration vanished under it, and every
 * member registered at the end is woken.
 */
import { jetstream } from '@nats-io/jetstream';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { waitFor } from '../../../devstack/daemons.js';
import { settleAll } from '../../../src/async/concurrency.js';
import { bridgeMetrics } from '../../../src/bridge/metrics.js';
import { VIEW_CHANNEL } from '../../../src/permissions/flags.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { hostFixtures, nextId } from '../../support/host-fixtures.js';
import { signDeviceToken, testJwtSecret } from '../../support/jwt.js';
import { productHarness, type ProductHarness } from './harness.js';

const members = 1_000;
const churning = members / 5;
const messages = 5;

let db: TestDatabase;
let h: ProductHarness;

beforeAll(async () => {
  db = await freshDatabase();
  h = await productHarness(db);
});

afterAll(async () => {
  await h?.close();
  await db?.drop();
});

const failedEvents = async () => (await bridgeMetrics.events.get()).values.find((v) => v.labels.outcome === 'failed')?.value ?? 0;

/** `count` members of a new server's channel, each signed in on `phone` and registered for FCM. */
async function channelOfMembers(count: number) {
  const host = hostFixtures(db.pool);
  const owner = await host.user();
  const ids = Array.from({ length: count }, () => nextId());
  const tokens = ids.map(() => h.fcm.fcm.inbox.mint());
  await db.pool.transaction(async (tx) => {
    await tx.query(sql.unsafe`INSERT INTO users (id, username) SELECT id, 'churn-' || id FROM unnest(${sql.array(ids, 'int8')}) AS id`);
    await tx.query(sql.unsafe`
      INSERT INTO refresh_tokens (user_id, device_id, expires_at) SELECT id, 'phone', now() + interval '1 day' FROM unnest(${sql.array(ids, 'int8')}) AS id`);
    await tx.query(sql.unsafe`
      INSERT INTO push_registrations (user_id, device_id, transport, token)
      SELECT id, 'phone', 'fcm', token FROM unnest(${sql.array(ids, 'int8')}, ${sql.array(tokens, 'text')}) AS m(id, token)`);
  });
  const server = await host.server({ owner, everyone: VIEW_CHANNEL });
  await db.pool.query(sql.unsafe`INSERT INTO server_members (server_id, user_id) SELECT ${server}, unnest(${sql.array(ids, 'int8')})`);
  return { owner, ids, channel: await host.channel(server) };
}

describe('fan-out while members log out and back in', () => {
  it(`a ${members}-member channel: no event fails, and every member registered at the end is woken`, { timeout: 300_000 }, async () => {
    const { owner, ids, channel } = await channelOfMembers(members);
    const say = async () => {
      const event = { id: nextId(), channel_id: channel, author_id: owner, created_at: new Date().toISOString() };
      await jetstream(h.nc).publish(`${h.subjectPrefix}channel.${channel}.MESSAGE_CREATE`, JSON.stringify(event));
    };
    const failedBefore = await failedEvents();

    // A fifth of the members log out (the app unregisters) and back in (a new session, a new
    // token), while the channel's messages keep coming.
    const churn = settleAll(ids.slice(0, churning), 8, async (userId) => {
      const token = await signDeviceToken({ userId, deviceId: 'phone', secret: testJwtSecret });
      expect((await h.api.request('DELETE', '/api/push/registration', { token })).status).toBe(204);
      await db.pool.query(sql.unsafe`
        INSERT INTO refresh_tokens (user_id, device_id, expires_at) VALUES (${userId}, 'phone', now() + interval '1 day')`);
      const put = await h.api.request('PUT', '/api/push/registration', { token, body: { transport: 'fcm', token: h.fcm.fcm.inbox.mint() } });
      expect(put.status, put.text).toBe(200);
    });
    const talk = (async () => {
      for (let i = 0; i < messages; i++) {
        await say();
        await new Promise((resolve) => setTimeout(resolve, 150));
      }
    })();
    const [churnFailures] = await Promise.all([churn, talk]);
    expect(churnFailures).toEqual([]);
    await say(); // the last one reaches everyone registered now

    const unwoken = async () =>
      db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
        SELECT count(*)::int AS n FROM push_registrations WHERE user_id = ANY(${sql.array(ids, 'int8')}) AND last_woken_at IS NULL`);
    await waitFor('every registered member woken', async () => (await unwoken()) === 0, 240_000);
    const registered = await db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM push_registrations WHERE user_id = ANY(${sql.array(ids, 'int8')})`);
    expect(registered).toBe(members);
    expect((await failedEvents()) - failedBefore).toBe(0);
  });
});

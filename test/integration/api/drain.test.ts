/**
 * `POST /api/push/drain`: takes what is waiting for the calling device exactly once (even
 * under many concurrent drains), clears the outstanding wake, tells the workflow nothing — and
 * never reveals a channel the caller may no longer see. Its optional body says what the phone
 * saw of its wake: a HIGH wake lowered to NORMAL is counted and shown; a bad body changes nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'slonik';
import { waitFor } from '../../../devstack/daemons.js';
import { startTestApi, type TestApi } from '../../support/api.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { signDeviceToken, testJwtSecret } from '../../support/jwt.js';
import {
  addPending,
  createDm,
  createServer,
  createTextChannel,
  createUser,
  denyViewChannel,
  nextId,
  pendingChannels,
  registrationId,
  registrationRowOf,
  signIn,
  snapshot,
} from './host.js';
import { checked } from './openapi.js';
import { seenWorkflow, terminateAll } from './temporal.js';
import { wakeReports } from '../../../src/api/metrics.js';

const taskQueue = `api-drain-${nextId()}`;

interface Item {
  channel_id: string;
  server_id: string | null;
  is_dm: boolean;
  message_count: number;
  first_message_id: string;
  first_at: string;
  last_message_id: string;
}

let db: TestDatabase;
let api: TestApi;

beforeAll(async () => {
  db = await freshDatabase();
  // The concurrency test sends more than the per-user limit at once; the limit has its own test.
  api = await startTestApi({ db, taskQueue, env: { PUSH_UP_ALLOW_PRIVATE: 'true' }, rateLimit: { perSecond: 10_000 } });
});

afterAll(async () => {
  await terminateAll(api.temporal.client, taskQueue);
  await api?.close();
  await db?.drop();
});

/** A user with a registered device; returns its token and registration id. */
async function registeredDevice(userId?: string) {
  const user = userId ?? (await createUser(db.pool));
  const deviceId = `phone-${nextId()}`;
  const token = await signDeviceToken({ userId: user, deviceId, secret: testJwtSecret });
  await signIn(db.pool, user, deviceId);
  const put = await api.request('PUT', '/api/push/registration', {
    token,
    body: { transport: 'unifiedpush', token: `https://ntfy.example/${deviceId}` },
  });
  expect(put.status).toBe(200);
  return { user, deviceId, token, registration: await registrationId(db.pool, user, deviceId) };
}

const drain = async (token: string) => checked(api)('POST', '/api/push/drain', { token });
const minutesAgo = (minutes: number) => new Date(Date.now() - minutes * 60_000);

describe('POST /api/push/drain', () => {
  it('is 404 for a device without a registration, so the app knows to register', async () => {
    const token = await signDeviceToken({ userId: await createUser(db.pool), deviceId: 'unregistered', secret: testJwtSecret });
    const response = await drain(token);
    expect(response.status).toBe(404);
    expect((response.json as { error: string }).error).toBe('not_found');
  });

  it('returns and deletes what is waiting — DMs first, then oldest first — clears the outstanding wake, and tells Temporal nothing', async () => {
    const device = await registeredDevice();
    const friend = await createUser(db.pool);
    const server = await createServer(db.pool, friend, [device.user]);
    const [general, random] = [await createTextChannel(db.pool, server), await createTextChannel(db.pool, server)];
    const [dm, group] = [await createDm(db.pool, [device.user, friend]), await createDm(db.pool, [device.user, friend, await createUser(db.pool)])];
    await addPending(db.pool, device.registration, [
      { channelId: general, isDm: false, firstAt: minutesAgo(30), messageCount: 12 },
      { channelId: dm, isDm: true, firstAt: minutesAgo(5), messageCount: 2 },
      { channelId: random, isDm: false, firstAt: minutesAgo(40) },
      { channelId: group, isDm: true, firstAt: minutesAgo(10), messageCount: 3 },
    ]);
    await db.pool.query(sql.unsafe`UPDATE push_registrations SET wake_outstanding = true WHERE id = ${device.registration}`);

    const response = await drain(device.token);
    expect(response.status).toBe(200);
    const items = response.json as Item[];
    expect(items.map((item) => item.channel_id)).toEqual([group, dm, random, general]);
    expect(items[0]).toEqual({
      channel_id: group,
      server_id: null,
      is_dm: true,
      message_count: 3,
      first_message_id: expect.stringMatching(/^\d+$/),
      first_at: expect.any(String),
      last_message_id: expect.stringMatching(/^\d+$/),
    });
    expect(items[3]).toMatchObject({ channel_id: general, server_id: server, is_dm: false, message_count: 12 });
    expect(Date.parse(items[3]!.first_at)).toBeLessThan(Date.parse(items[1]!.first_at));

    expect(await pendingChannels(db.pool, device.registration)).toEqual([]);
    expect((await registrationRowOf(db.pool, device.user, device.deviceId))?.wake_outstanding).toBe(false);
    expect((await drain(device.token)).json).toEqual([]);
    // A drain tells Temporal nothing: the workflow learns of it from its next claim. After a
    // re-registration (whose signal the signaller sends), the history holds the two
    // registrations' signals and nothing the two drains sent.
    const again = await checked(api)('PUT', '/api/push/registration', {
      token: device.token,
      body: { transport: 'unifiedpush', token: `https://ntfy.example/${device.deviceId}` },
    });
    expect(again.status).toBe(200);
    const signals = await waitFor(
      'the second registration signal',
      async () => {
        const names = (await seenWorkflow(api.temporal.client, device.user, device.deviceId))?.signals.map((signal) => signal.name);
        return names !== undefined && names.filter((name) => name === 'registered').length >= 2 && names;
      },
      10_000,
    );
    expect(signals).toEqual(['registered', 'registered']);
  });

  it('clears the outstanding wake even when nothing is waiting', async () => {
    const device = await registeredDevice();
    await db.pool.query(sql.unsafe`UPDATE push_registrations SET wake_outstanding = true WHERE id = ${device.registration}`);
    expect((await drain(device.token)).json).toEqual([]);
    expect((await registrationRowOf(db.pool, device.user, device.deviceId))?.wake_outstanding).toBe(false);
  });

  it('drains only the calling device: another device of the same user keeps its queue', async () => {
    const phone = await registeredDevice();
    const tablet = await registeredDevice(phone.user);
    const dm = await createDm(db.pool, [phone.user, await createUser(db.pool)]);
    await addPending(db.pool, phone.registration, [{ channelId: dm, isDm: true, firstAt: new Date() }]);
    await addPending(db.pool, tablet.registration, [{ channelId: dm, isDm: true, firstAt: new Date() }]);
    expect((await drain(phone.token)).json).toHaveLength(1);
    expect(await pendingChannels(db.pool, tablet.registration)).toEqual([dm]);
  });
});

describe('the drain-time visibility re-check', () => {
  it('deletes but never returns channels the caller may no longer see', async () => {
    const device = await registeredDevice();
    const me = device.user;
    const friend = await createUser(db.pool);
    const owner = await createUser(db.pool);

    const keptDm = await createDm(db.pool, [me, friend]);
    const leftDm = await createDm(db.pool, [me, friend]);
    await db.pool.query(sql.unsafe`DELETE FROM channel_members WHERE channel_id = ${leftDm} AND user_id = ${me}`);

    const server = await createServer(db.pool, owner, [me]);
    const visible = await createTextChannel(db.pool, server);
    const hidden = await createTextChannel(db.pool, server);
    await denyViewChannel(db.pool, hidden, me);
    const deleted = await createTextChannel(db.pool, server);

    const leftServer = await createServer(db.pool, owner, [me]);
    const leftServerChannel = await createTextChannel(db.pool, leftServer);
    await db.pool.query(sql.unsafe`DELETE FROM server_members WHERE server_id = ${leftServer} AND user_id = ${me}`);

    const ownServer = await createServer(db.pool, me, [], 0n); // @everyone cannot view; the owner still can
    const ownChannel = await createTextChannel(db.pool, ownServer);

    const all = [keptDm, leftDm, visible, hidden, deleted, leftServerChannel, ownChannel];
    await addPending(
      db.pool,
      device.registration,
      all.map((channelId, i) => ({ channelId, isDm: i < 2, firstAt: minutesAgo(60 - i) })),
    );
    await db.pool.query(sql.unsafe`DELETE FROM channels WHERE id = ${deleted}`);

    const items = (await drain(device.token)).json as Item[];
    expect(items.map((item) => item.channel_id)).toEqual([keptDm, visible, ownChannel]);
    expect(items.map((item) => item.server_id)).toEqual([null, server, ownServer]);
    expect(await pendingChannels(db.pool, device.registration)).toEqual([]);
  });
});

describe('drain atomicity under concurrency', () => {
  it('many parallel drains, while new rows keep arriving, return every row exactly once', async () => {
    const device = await registeredDevice();
    const friend = await createUser(db.pool);
    const channels: string[] = [];
    for (let i = 0; i < 240; i++) channels.push(nextId());
    await db.pool.query(sql.unsafe`INSERT INTO channels (id, server_id, type) SELECT unnest(${sql.array(channels, 'int8')}), NULL, 'dm'`);
    await db.pool.query(sql.unsafe`
      INSERT INTO channel_members (channel_id, user_id)
      SELECT c, u FROM unnest(${sql.array(channels, 'int8')}) c, unnest(${sql.array([device.user, friend], 'int8')}) u
    `);
    const insertBatch = async (batch: readonly string[]) => {
      await db.pool.query(sql.unsafe`
        INSERT INTO push_pending (registration_id, channel_id, message_count, first_message_id, first_at, last_message_id, is_dm)
        SELECT ${device.registration}, c, 1, c, now(), c, true FROM unnest(${sql.array(batch, 'int8')}) c
      `);
    };

    await insertBatch(channels.slice(0, 120));
    const arrivals = (async () => {
      for (let i = 120; i < 240; i += 10) await insertBatch(channels.slice(i, i + 10));
    })();
    const drains = Array.from({ length: 32 }, () => drain(device.token));
    const [responses] = await Promise.all([Promise.all(drains), arrivals]);
    const final = await drain(device.token);

    const returned = [...responses, final].flatMap((response) => {
      expect(response.status).toBe(200);
      return (response.json as Item[]).map((item) => item.channel_id);
    });
    expect(returned).toHaveLength(channels.length);
    expect(new Set(returned).size).toBe(channels.length);
    expect([...returned].sort()).toEqual([...channels].sort());
    expect(await pendingChannels(db.pool, device.registration)).toEqual([]);
  });
});

describe("what the phone saw of its wake (the drain's optional body)", () => {
  const report = (priority: string, original_priority: string) => ({ wake: { priority, original_priority } });
  const drainWith = async (token: string, body: unknown) => checked(api)('POST', '/api/push/drain', { token, body });
  const lowered = async (device: { user: string; deviceId: string; token: string; registration: string }) => {
    const view = await checked(api)('GET', '/api/push/registration', { token: device.token });
    const count = await db.pool.oneFirst(sql.unsafe`SELECT priority_lowered_wakes FROM push_registrations WHERE id = ${device.registration}`);
    return { shown: (view.json as { delivery: { priority_lowered: boolean } }).delivery.priority_lowered, count };
  };
  const loweredOverall = async () =>
    (await wakeReports.get()).values
      .filter((v) => v.labels.original_priority === 'high' && v.labels.priority === 'normal')
      .reduce((n, v) => n + v.value, 0);

  it('counts a HIGH wake that arrived as NORMAL per device and overall, shows it until a HIGH one arrives as HIGH', async () => {
    const device = await registeredDevice();
    const before = await loweredOverall();
    expect(await lowered(device)).toEqual({ shown: false, count: 0 });

    expect((await drainWith(device.token, report('normal', 'high'))).status).toBe(200);
    expect(await lowered(device)).toEqual({ shown: true, count: 1 });
    expect(await loweredOverall()).toBe(before + 1);
    // A NORMAL wake says nothing about HIGH ones; a drain without a report neither.
    expect((await drainWith(device.token, report('normal', 'normal'))).status).toBe(200);
    expect((await drain(device.token)).status).toBe(200);
    expect(await lowered(device)).toEqual({ shown: true, count: 1 });
    expect((await drainWith(device.token, report('normal', 'high'))).status).toBe(200);
    expect(await lowered(device)).toEqual({ shown: true, count: 2 });
    // A HIGH wake that arrived HIGH: no longer lowered; the count stays.
    expect((await drainWith(device.token, report('high', 'high'))).status).toBe(200);
    expect(await lowered(device)).toEqual({ shown: false, count: 2 });
    expect(await loweredOverall()).toBe(before + 2);
  });

  it.each([
    ['no body', undefined],
    ['an empty JSON object', {}],
    ['unknown fields only', { app_version: '1.2.3' }],
  ])('drains with %s as before', async (_name, body) => {
    const device = await registeredDevice();
    const dm = await createDm(db.pool, [device.user, await createUser(db.pool)]);
    await addPending(db.pool, device.registration, [{ channelId: dm, isDm: true, firstAt: new Date() }]);
    const response = await drainWith(device.token, body);
    expect(response.status, response.text).toBe(200);
    expect((response.json as Item[]).map((item) => item.channel_id)).toEqual([dm]);
  });

  it('drains with an empty body whatever its headers say', async () => {
    const device = await registeredDevice();
    for (const headers of [
      { 'content-type': 'application/json', 'content-length': '0' },
      { 'content-type': 'text/plain', 'content-length': '0' },
    ]) {
      const response = await checked(api)('POST', '/api/push/drain', { token: device.token, headers });
      expect(response.status, response.text).toBe(200);
    }
  });

  it.each([
    ['a body that is not JSON', '{"wake":', 'application/json', 400],
    ['an array', '[]', 'application/json', 400],
    ['wake as a string', JSON.stringify({ wake: 'high' }), 'application/json', 400],
    ['wake without its original priority', JSON.stringify({ wake: { priority: 'high' } }), 'application/json', 400],
    ['an unknown priority', JSON.stringify(report('urgent', 'high')), 'application/json', 400],
    ['an unknown original priority', JSON.stringify(report('normal', 'HIGH')), 'application/json', 400],
    ['a body that is not JSON by its media type', JSON.stringify(report('normal', 'high')), 'text/plain', 415],
    ['a body over 4096 bytes', JSON.stringify({ ...report('normal', 'high'), padding: 'x'.repeat(5_000) }), 'application/json', 413],
  ])('refuses %s with a 4xx and changes nothing', async (_name, body, type, status) => {
    const device = await registeredDevice();
    const dm = await createDm(db.pool, [device.user, await createUser(db.pool)]);
    await addPending(db.pool, device.registration, [{ channelId: dm, isDm: true, firstAt: new Date() }]);
    await db.pool.query(sql.unsafe`UPDATE push_registrations SET wake_outstanding = true WHERE id = ${device.registration}`);
    const before = await snapshot(db.pool);
    const response = await checked(api)('POST', '/api/push/drain', { token: device.token, body, headers: { 'content-type': type } });
    expect(response.status, response.text).toBe(status);
    expect(await snapshot(db.pool)).toBe(before);
  });
});

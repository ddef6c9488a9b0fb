/**
 * The api's limits and its behaviour at the edges: the per-user rate limit, JSON errors for
 * unknown paths and methods, and registrations that still succeed while Temporal is down.
 */
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { waitFor } from '../../../devstack/daemons.js';
import { startTestApi, type TestApi } from '../../support/api.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { signDeviceToken, testJwtSecret } from '../../support/jwt.js';
import { freePort } from '../../../devstack/ports.js';
import { createUser, nextId, registrationRowOf, signIn } from './host.js';
import { checked } from './openapi.js';
import { seenWorkflow, terminateAll } from './temporal.js';

const taskQueue = `api-limits-${nextId()}`;

let db: TestDatabase;
let api: TestApi;

beforeAll(async () => {
  db = await freshDatabase();
  api = await startTestApi({ db, taskQueue, env: { PUSH_UP_ALLOW_PRIVATE: 'true' } });
});

afterAll(async () => {
  await terminateAll(api.temporal.client, taskQueue);
  await api?.close();
  await db?.drop();
});

const tokenOf = (userId: string, deviceId = 'phone') => signDeviceToken({ userId, deviceId, secret: testJwtSecret });

describe('the per-user rate limit (50 requests/s)', () => {
  let limited: TestApi;
  let now = 0;
  beforeAll(async () => {
    // A clock that moves only when the test says so: the limit is checked, not raced.
    limited = await startTestApi({ db, taskQueue, rateLimit: { perSecond: 50, now: () => now } });
  });
  afterAll(async () => limited?.close());

  it('allows 50 requests, then answers 429 rate_limited with Retry-After, across endpoints and devices of the user', async () => {
    const user = await createUser(db.pool);
    const [phone, tablet] = [await tokenOf(user, 'phone'), await tokenOf(user, 'tablet')];
    const statuses = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        checked(limited)(i % 2 === 0 ? 'GET' : 'POST', i % 2 === 0 ? '/api/push/config' : '/api/push/drain', { token: i % 3 === 0 ? tablet : phone }),
      ),
    );
    expect(statuses.every((response) => response.status !== 429)).toBe(true);
    const refused = await checked(limited)('GET', '/api/push/config', { token: tablet });
    expect(refused.status).toBe(429);
    expect(refused.json).toEqual({ error: 'rate_limited', message: expect.any(String) });
    expect(refused.headers['retry-after']).toBe('1');

    const otherUser = await tokenOf(await createUser(db.pool));
    expect((await checked(limited)('GET', '/api/push/config', { token: otherUser })).status).toBe(200);

    now += 1_000;
    expect((await checked(limited)('GET', '/api/push/config', { token: phone })).status).toBe(200);
  });

  it('does not count requests it refuses at authentication against anyone', async () => {
    const user = await createUser(db.pool);
    const expired = await signDeviceToken({ userId: user, deviceId: 'phone', secret: testJwtSecret, expiresIn: Math.floor(Date.now() / 1000) - 10 });
    for (let i = 0; i < 60; i++) expect((await limited.request('GET', '/api/push/config', { token: expired })).status).toBe(401);
    expect((await checked(limited)('GET', '/api/push/config', { token: await tokenOf(user) })).status).toBe(200);
  });

  it('a rate-limited PUT changes nothing', async () => {
    const user = await createUser(db.pool);
    const token = await tokenOf(user);
    await signIn(db.pool, user, 'phone');
    for (let i = 0; i < 50; i++) await limited.request('GET', '/api/push/config', { token });
    const response = await checked(limited)('PUT', '/api/push/registration', {
      token,
      body: { transport: 'unifiedpush', token: 'https://ntfy.example/x' },
    });
    expect(response.status).toBe(429);
    expect(await registrationRowOf(db.pool, user, 'phone')).toBeNull();
  });
});

describe('paths and methods', () => {
  it.each([
    ['GET', '/api/push'],
    ['GET', '/api/push/registrations'],
    ['POST', '/api/device-tokens'],
    ['GET', '/'],
    ['GET', '/api/keys/devices/'],
  ])('%s %s is a JSON 404', async (method, path) => {
    const response = await checked(api)(method, path, { token: await tokenOf(await createUser(db.pool)) });
    expect(response.status).toBe(404);
    expect(response.json).toEqual({ error: 'not_found', message: 'no such endpoint' });
  });

  it.each([
    ['POST', '/api/push/config'],
    ['PATCH', '/api/push/registration'],
    ['GET', '/api/push/drain'],
    ['PUT', '/api/keys/devices/phone'],
    ['PROPFIND', '/api/push/registration'],
  ])('%s %s is a JSON 405, not a 5xx', async (method, path) => {
    const response = await checked(api)(method, path);
    expect(response.status).toBe(405);
    expect(response.json).toEqual({ error: 'method_not_allowed', message: expect.any(String) });
    expect(response.headers['allow']).toBeDefined();
  });

  it('answers HEAD and OPTIONS without a 5xx', async () => {
    const token = await tokenOf(await createUser(db.pool));
    expect((await checked(api)('HEAD', '/api/push/config', { token })).status).toBe(200);
    const options = await api.request('OPTIONS', '/api/push/registration');
    expect(options.status).toBe(200);
    expect(String(options.headers['allow']).split(/,\s*/).sort()).toEqual(['DELETE', 'GET', 'HEAD', 'PUT']);
  });
});

describe('Temporal unreachable', () => {
  it('PUT, drain and DELETE still succeed from PostgreSQL; the workflow start stays owed; the missed stop is counted and logged with ids only', async () => {
    // A database of its own, with no signaller on it: what the PUT owes stays in the outbox.
    const downDb = await freshDatabase();
    const down = await startTestApi({
      db: downDb,
      taskQueue,
      env: { TEMPORAL_ADDRESS: `127.0.0.1:${await freePort()}`, PUSH_UP_ALLOW_PRIVATE: 'true' },
      temporalDeadlineMs: 1_000,
      signaller: false,
    });
    try {
      const user = await createUser(downDb.pool);
      const token = await tokenOf(user);
      await signIn(downDb.pool, user, 'phone');
      const failuresBefore = await signalFailures();
      const endpoint = `https://ntfy.example/${nextId()}`;

      const put = await checked(down)('PUT', '/api/push/registration', { token, body: { transport: 'unifiedpush', token: endpoint } });
      expect(put.status).toBe(200);
      const row = await registrationRowOf(downDb.pool, user, 'phone');
      expect(row?.token).toBe(endpoint);
      // The PUT needed nothing from Temporal: the workflow's start is owed with the registration.
      expect(await owedTo(downDb, row!.id)).toEqual(['registered']);
      expect((await checked(down)('POST', '/api/push/drain', { token })).status).toBe(200);
      expect((await checked(down)('DELETE', '/api/push/registration', { token })).status).toBe(204);

      // The drain tells Temporal nothing, and needs nothing from it.
      const failuresAfter = await waitFor(
        'the stop signal to fail',
        async () => {
          const now = await signalFailures();
          return now.deleted > failuresBefore.deleted && now;
        },
        10_000,
      );
      expect(failuresAfter.deleted - failuresBefore.deleted).toBe(1);
      const warnings = down.logs.filter((line) => line.includes('could not tell Temporal'));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toContain(`"userId":"${user}"`);
      for (const line of down.logs) expect(line).not.toContain(endpoint);
      expect(await seenWorkflow(api.temporal.client, user, 'phone')).toBeUndefined();
    } finally {
      await down.close();
      await downDb.drop();
    }
  });
});

/** The signals the outbox still owes to a registration's workflow. */
async function owedTo(database: TestDatabase, registrationId: string): Promise<string[]> {
  return [
    ...(await database.pool.anyFirst(sql.type(z.object({ signal: z.string() }))`
      SELECT signal FROM push_signal_outbox WHERE ${registrationId}::int8 = ANY(registration_ids)`)),
  ];
}

/** The api's Temporal-failure counter, read from its own /metrics. */
async function signalFailures(): Promise<Record<'deleted', number>> {
  const text = (await api.request('GET', '/metrics')).text;
  const value = (signal: string) => {
    const match = new RegExp(`^push_api_temporal_signal_failures_total\\{signal="${signal}"\\} (\\d+)$`, 'm').exec(text);
    return match === null ? 0 : Number(match[1]);
  };
  return { deleted: value('deleted') };
}

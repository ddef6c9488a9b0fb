/**
 * Every device endpoint refuses forged and broken tokens with a 401 JSON and changes nothing;
 * a valid token reaches only its own device, whatever the body claims.
 */
import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { signClaims, signDeviceToken, testJwtSecret, unsignedToken } from '../../support/jwt.js';
import { addPending, createDm, createUser, nextId, pendingChannels, registrationId, registrationRowOf, signIn, snapshot } from './host.js';
import { checked } from './openapi.js';
import { terminateAll } from './temporal.js';

const taskQueue = `api-auth-${nextId()}`;
const endpoints: readonly [method: string, path: string][] = [
  ['GET', '/api/push/config'],
  ['PUT', '/api/push/registration'],
  ['GET', '/api/push/registration'],
  ['DELETE', '/api/push/registration'],
  ['POST', '/api/push/drain'],
  ['DELETE', '/api/keys/devices/phone'],
];

let db: TestDatabase;
let api: TestApi;
let rsaApi: TestApi;
let user: string;
const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const rsaPem = rsa.publicKey.export({ type: 'spki', format: 'pem' }).toString();

beforeAll(async () => {
  db = await freshDatabase();
  api = await startTestApi({ db, taskQueue, env: { PUSH_UP_ALLOW_PRIVATE: 'true' } });
  rsaApi = await startTestApi({ db, taskQueue, env: { JWT_SECRET: undefined, JWT_PUBLIC_KEY: rsaPem, PUSH_UP_ALLOW_PRIVATE: 'true' } });
  user = await createUser(db.pool);
  // The device every forged token below names: registered, with keys, sessions and a pending row.
  const token = await signDeviceToken({ userId: user, deviceId: 'phone', secret: testJwtSecret });
  await signIn(db.pool, user, 'phone');
  expect(
    (await api.request('PUT', '/api/push/registration', { token, body: { transport: 'unifiedpush', token: 'https://ntfy.example/up1' } })).status,
  ).toBe(200);
  await addPending(db.pool, await registrationId(db.pool, user, 'phone'), [
    { channelId: await createDm(db.pool, [user, await createUser(db.pool)]), isDm: true, firstAt: new Date() },
  ]);
});

afterAll(async () => {
  await terminateAll(api.temporal.client, taskQueue);
  await api?.close();
  await rsaApi?.close();
  await db?.drop();
});

const now = () => Math.floor(Date.now() / 1000);
const hs = { secret: testJwtSecret };
const forged: [string, () => Promise<string | undefined>][] = [
  ['no Authorization header', async () => undefined],
  ['an empty token', async () => ''],
  ['garbage', async () => 'definitely-not-a-jwt'],
  ['alg none', async () => unsignedToken({ sub: user, device_id: 'phone', exp: now() + 600 })],
  ['the wrong secret', async () => signDeviceToken({ userId: user, deviceId: 'phone', secret: 'a-different-secret-of-at-least-32-bytes' })],
  ['an expired token', async () => signDeviceToken({ userId: user, deviceId: 'phone', secret: testJwtSecret, expiresIn: now() - 5 })],
  ['no exp', async () => signClaims({ sub: user, device_id: 'phone' }, hs)],
  ['no sub', async () => signClaims({ device_id: 'phone', exp: now() + 600 }, hs)],
  ['a numeric sub', async () => signClaims({ sub: Number(user), device_id: 'phone', exp: now() + 600 }, hs)],
  ['no device_id', async () => signClaims({ sub: user, exp: now() + 600 }, hs)],
  ['a numeric device_id', async () => signClaims({ sub: user, device_id: 1, exp: now() + 600 }, hs)],
  ['an empty device_id', async () => signClaims({ sub: user, device_id: '', exp: now() + 600 }, hs)],
];

describe('forged tokens', () => {
  it.each(forged)('%s: 401 JSON with WWW-Authenticate on every endpoint, nothing changed', async (_name, make) => {
    const token = await make();
    const before = await snapshot(db.pool);
    for (const [method, path] of endpoints) {
      const response = await checked(api)(method, path, {
        headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
        ...(method === 'PUT' ? { body: { transport: 'unifiedpush', token: 'https://ntfy.example/forged' } } : {}),
      });
      expect(response.status, `${method} ${path}`).toBe(401);
      expect(response.json).toEqual({ error: 'unauthorized', message: expect.any(String) });
      expect(response.headers['www-authenticate']).toBe('Bearer');
    }
    expect(await snapshot(db.pool)).toBe(before);
  });

  it('an instance keyed with an RSA public key refuses HS256 signed with that key (algorithm confusion)', async () => {
    const confused = await signDeviceToken({ userId: user, deviceId: 'phone', secretBytes: new TextEncoder().encode(rsaPem), algorithm: 'HS256' });
    const sharedSecret = await signDeviceToken({ userId: user, deviceId: 'phone', secret: testJwtSecret });
    for (const token of [confused, sharedSecret]) {
      expect((await checked(rsaApi)('POST', '/api/push/drain', { token })).status).toBe(401);
    }
    const genuine = await signDeviceToken({ userId: user, deviceId: 'phone', privateKey: rsa.privateKey, algorithm: 'RS256' });
    expect((await checked(rsaApi)('GET', '/api/push/registration', { token: genuine })).status).toBe(200);
  });
});

describe("another device's token", () => {
  it('sees, drains and deletes only its own registration', async () => {
    const registration = await registrationId(db.pool, user, 'phone');
    const pendingBefore = await pendingChannels(db.pool, registration);
    expect(pendingBefore).toHaveLength(1);
    const tablet = await signDeviceToken({ userId: user, deviceId: 'tablet', secret: testJwtSecret });

    expect((await checked(api)('GET', '/api/push/registration', { token: tablet })).status).toBe(404);
    expect((await checked(api)('POST', '/api/push/drain', { token: tablet })).status).toBe(404);
    expect((await checked(api)('DELETE', '/api/push/registration', { token: tablet })).status).toBe(204);
    expect(await registrationRowOf(db.pool, user, 'phone')).not.toBeNull();
    expect(await pendingChannels(db.pool, registration)).toEqual(pendingBefore);
  });

  it('a token of another user with the same device id reaches nothing of this user', async () => {
    const stranger = await createUser(db.pool);
    const token = await signDeviceToken({ userId: stranger, deviceId: 'phone', secret: testJwtSecret });
    const before = await snapshot(db.pool);
    expect((await checked(api)('GET', '/api/push/registration', { token })).status).toBe(404);
    expect((await checked(api)('POST', '/api/push/drain', { token })).status).toBe(404);
    expect((await checked(api)('DELETE', '/api/keys/devices/phone', { token })).status).toBe(404);
    expect(await snapshot(db.pool)).toBe(before);
  });

  it('a body naming another user or device changes only the caller’s own registration', async () => {
    const victim = await createUser(db.pool);
    const laptop = `laptop-${nextId()}`;
    const token = await signDeviceToken({ userId: user, deviceId: laptop, secret: testJwtSecret });
    await signIn(db.pool, user, laptop);
    const response = await checked(api)('PUT', '/api/push/registration', {
      token,
      body: { transport: 'unifiedpush', token: 'https://ntfy.example/up2', user_id: victim, device_id: 'phone' },
    });
    expect(response.status).toBe(200);
    expect(await registrationRowOf(db.pool, victim, 'phone')).toBeNull();
    expect((await registrationRowOf(db.pool, user, 'phone'))?.token).toBe('https://ntfy.example/up1');
  });
});

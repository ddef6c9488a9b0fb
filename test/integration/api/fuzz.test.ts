/**
 * Thousands of randomized bad requests — broken bodies, hostile endpoints, bad keys, forged
 * tokens, odd methods, paths and headers — against the real app on real PostgreSQL: none may
 * yield a 5xx, every documented response must match the OpenAPI document, and no row may
 * change. Each generated request is invalid by construction, so any 2xx on a write is a bug.
 */
import { createECDH, generateKeyPairSync, randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'slonik';
import type { LookupHost } from '../../../src/api/unifiedpush-endpoint.js';
import { startTestApi, type RequestOptions, type TestApi } from '../../support/api.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { signClaims, signDeviceToken, testJwtSecret, unsignedToken } from '../../support/jwt.js';
import { addPending, createDm, createUser, nextId, registrationId, snapshot } from './host.js';
import { assertDocumented } from './openapi.js';
import { terminateAll } from './temporal.js';

const taskQueue = `api-fuzz-${nextId()}`;
const runs = 3_000;

/** Every name resolves to a private address or not at all: no endpoint here may be accepted. */
const lookupHost: LookupHost = async (host) => {
  if (host.length % 2 === 0) return ['10.0.0.7'];
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
};

let db: TestDatabase;
let plain: TestApi;
let withFcm: TestApi;
let user: string;
let goodToken: string;
let forgedTokens: string[];

beforeAll(async () => {
  db = await freshDatabase();
  const rateLimit = { perSecond: 1e9 }; // the limit would answer 429 before the rules under test
  plain = await startTestApi({ db, taskQueue, lookupHost, rateLimit });
  withFcm = await startTestApi({ db, taskQueue, lookupHost, rateLimit, env: { FCM_PROJECT_ID: 'zippchat-fuzz' } });
  user = await createUser(db.pool);
  goodToken = await signDeviceToken({ userId: user, deviceId: 'phone', secret: testJwtSecret });
  // State to protect: a registration with keys and a pending row, a key bundle, a session.
  const ecdh = createECDH('prime256v1');
  ecdh.generateKeys();
  await db.pool.query(sql.unsafe`
    INSERT INTO push_registrations (user_id, device_id, transport, token, up_p256dh, up_auth, wake_outstanding, failures)
    VALUES (${user}, 'phone', 'unifiedpush', 'https://ntfy.example/seed', ${sql.binary(ecdh.getPublicKey())}, ${sql.binary(randomBytes(16))}, true, 2)
  `);
  await addPending(db.pool, await registrationId(db.pool, user, 'phone'), [
    { channelId: await createDm(db.pool, [user, await createUser(db.pool)]), isDm: true, firstAt: new Date() },
  ]);
  await db.pool.query(sql.unsafe`INSERT INTO device_keys (user_id, device_id, identity_key) VALUES (${user}, 'phone', '\\x01')`);
  await db.pool.query(sql.unsafe`INSERT INTO refresh_tokens (user_id, device_id, expires_at) VALUES (${user}, 'phone', now() + interval '1 day')`);

  const now = Math.floor(Date.now() / 1000);
  const hs = { secret: testJwtSecret };
  const ec = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  forgedTokens = [
    unsignedToken({ sub: user, device_id: 'phone', exp: now + 600 }),
    await signDeviceToken({ userId: user, deviceId: 'phone', secret: 'not-the-secret-but-long-enough-32-bytes' }),
    await signDeviceToken({ userId: user, deviceId: 'phone', secret: testJwtSecret, expiresIn: now - 1 }),
    await signDeviceToken({ userId: user, deviceId: 'phone', privateKey: ec.privateKey, algorithm: 'ES256' }),
    await signClaims({ sub: user, device_id: 'phone' }, hs),
    await signClaims({ sub: Number(user), device_id: 'phone', exp: now + 600 }, hs),
    await signClaims({ sub: user, device_id: ['phone'], exp: now + 600 }, hs),
    await signClaims({ sub: user, device_id: 'ph\ud800one', exp: now + 600 }, hs),
    await signClaims({ sub: user, device_id: 'x'.repeat(129), exp: now + 600 }, hs),
    await signClaims({ sub: `${user}\u0000`, device_id: 'phone', exp: now + 600 }, hs),
    goodToken.slice(0, -2),
    `${goodToken}x`,
  ];
});

afterAll(async () => {
  await terminateAll(plain.temporal.client, taskQueue);
  await plain?.close();
  await withFcm?.close();
  await db?.drop();
});

// ---- generators ----------------------------------------------------------------------------

const printable = fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 40 });
const anyText = fc.string({ unit: 'binary', maxLength: 60 });
const hostName = fc.oneof(
  fc.domain(),
  fc.constantFrom(
    'localhost',
    'ntfy.sh',
    'internal',
    '127.0.0.1',
    '[::1]',
    '10.0.0.1',
    '169.254.169.254',
    '0.0.0.0',
    '[::ffff:192.168.0.1]',
    '2130706433',
    '0x7f.1',
    '[fe80::1]',
    '100.64.0.1',
  ),
);
/** UnifiedPush endpoints that must all be refused (bad form, or a host that is not public). */
const endpoint = fc.oneof(
  fc
    .tuple(
      fc.constantFrom('https://', 'http://', 'HTTPS://', 'ftp://', 'https:', 'https:///', '//', ''),
      hostName,
      fc.constantFrom('', ':443', ':0', ':99999', ':8080'),
      fc.webPath(),
    )
    .map(([scheme, host, port, path]) => `${scheme}${host}${port}${path}`),
  fc.tuple(fc.constantFrom('user:pw@', '@', 'a@b@'), hostName).map(([creds, host]) => `https://${creds}${host}/up`),
  fc.tuple(fc.constantFrom(' ', '\t', '\n', '\u0000', '\\', '\ud800', '\u0085'), hostName).map(([bad, host]) => `https://${host}/u${bad}p`),
  fc.integer({ min: 2_049, max: 6_000 }).map((n) => `https://ntfy.sh/${'a'.repeat(n)}`),
  anyText,
);
const validKey = () => {
  const ecdh = createECDH('prime256v1');
  ecdh.generateKeys();
  return ecdh.getPublicKey().toString('base64url');
};
const key = fc.oneof(
  fc.constant(undefined),
  fc.constant(null),
  fc.constant(validKey()),
  fc.uint8Array({ minLength: 0, maxLength: 80 }).map((bytes) => Buffer.from(bytes).toString('base64url')),
  fc.uint8Array({ minLength: 16, maxLength: 16 }).map((bytes) => Buffer.from(bytes).toString('base64')),
  anyText,
  fc.integer(),
);
/** FCM tokens that break a rule: empty, too long, whitespace / control / lone surrogate inside. */
const badFcmToken = fc.oneof(
  fc.constant(''),
  fc.integer({ min: 2_049, max: 3_000 }).map((n) => 'f'.repeat(n)),
  fc
    .tuple(printable, fc.constantFrom(' ', '\t', '\n', '\r', '\u0000', '\u007f', '\ud800', '\u00a0', '\u2028'), printable)
    .map(([a, bad, b]) => `${a}${bad}${b}`),
);
const registrationBody = fc.oneof(
  fc.record({ transport: fc.constant('unifiedpush'), token: endpoint, p256dh: key, auth: key }, { requiredKeys: ['transport'] }),
  fc.record(
    { transport: fc.constant('fcm'), token: badFcmToken, user_id: fc.constant(nextId()), device_id: printable },
    { requiredKeys: ['transport', 'token'] },
  ),
  fc.record({
    transport: fc.constant('fcm'),
    token: printable.map((t) => `t${t.replace(/\s/g, '')}`),
    p256dh: fc.constant(validKey()),
    auth: fc.constant(randomBytes(16).toString('base64url')),
  }),
  fc.record({
    transport: fc.oneof(anyText, fc.integer(), fc.constant(null), fc.constantFrom('FCM', 'apns', 'UnifiedPush', ' fcm')),
    token: fc.oneof(endpoint, printable),
  }),
  fc.jsonValue({ maxDepth: 3 }),
);

type Generated = { app: 'plain' | 'withFcm'; method: string; path: string; options: RequestOptions; mustBeClientError: boolean };

const registrationPut = fc
  .record({
    app: fc.constantFrom('plain' as const, 'withFcm' as const),
    body: registrationBody,
    contentType: fc.constantFrom('application/json', 'application/json; charset=utf-8', 'APPLICATION/JSON', 'application/json; charset=utf8'),
  })
  .map(({ app, body, contentType }): Generated => ({
    app,
    method: 'PUT',
    path: '/api/push/registration',
    options: { token: goodToken, headers: { 'content-type': contentType }, body: JSON.stringify(body) ?? 'undefined' },
    mustBeClientError: true,
  }));

const rawPut = fc
  .record({
    bytes: fc.oneof(
      fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b)),
      fc.integer({ min: 4_097, max: 70_000 }).map((n) => Buffer.alloc(n, 0x7b)),
    ),
    contentType: fc.oneof(
      fc.constantFrom(
        'application/json',
        'text/plain',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=x',
        'application/json; charset=utf-16',
        '',
      ),
      printable,
    ),
    encoding: fc.constantFrom(undefined, 'gzip', 'br', 'identity'),
  })
  .map(({ bytes, contentType, encoding }): Generated => ({
    app: 'plain',
    method: 'PUT',
    path: '/api/push/registration',
    options: {
      token: goodToken,
      body: bytes,
      headers: {
        ...(contentType === '' ? {} : { 'content-type': contentType }),
        ...(encoding === undefined ? {} : { 'content-encoding': encoding }),
      },
    },
    mustBeClientError: true,
  }));

const methods = fc.constantFrom('GET', 'PUT', 'POST', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS', 'PROPFIND', 'TRACE');
const apiPaths = fc.oneof(
  fc.constantFrom(
    '/api/push/config',
    '/api/push/registration',
    '/api/push/drain',
    '/api/keys/devices/phone',
    '/api/push/',
    '/api/push/drain/',
    '/api/keys/devices/',
    '/api//push/config',
    '/API/PUSH/CONFIG',
  ),
  fc.array(printable, { minLength: 1, maxLength: 4 }).map((segments) => `/api/${segments.map(encodeURIComponent).join('/')}`),
  fc.constantFrom('%zz', '%E0%A4%A', '%00', '%ED%A0%80', '..', '%2e%2e', 'a%2Fb').map((s) => `/api/keys/devices/${s}`),
);
const badAuthorization = fc.oneof(
  fc.constant(undefined),
  printable.map((text) => text),
  fc.nat().map((i) => `Bearer ${forgedTokens[i % forgedTokens.length]}`),
  fc.nat().map((i) => `Basic ${forgedTokens[i % forgedTokens.length]}`),
  printable.map((text) => `Bearer ${text}`),
);
const unauthenticated = fc
  .record({ method: methods, path: apiPaths, authorization: badAuthorization, body: fc.option(fc.jsonValue({ maxDepth: 2 }), { nil: undefined }) })
  .map(({ method, path, authorization, body }): Generated => ({
    app: 'plain',
    method,
    path,
    options: {
      headers: authorization === undefined ? {} : { authorization },
      ...(body === undefined || method === 'GET' || method === 'HEAD' ? {} : { body }),
    },
    mustBeClientError: method !== 'OPTIONS',
  }));

/** Authenticated requests that must not change anything: reads, refusals, revoking what does not exist. */
const harmlessAuthenticated = fc
  .oneof(
    fc.constantFrom<[string, string]>(
      ['GET', '/api/push/config'],
      ['GET', '/api/push/registration'],
      ['HEAD', '/api/push/registration'],
      ['PATCH', '/api/push/drain'],
      ['POST', '/api/push/config'],
    ),
    fc
      .oneof(fc.string({ unit: 'binary', minLength: 1, maxLength: 140 }), fc.constantFrom('x'.repeat(129), '\u0000', 'a\nb'))
      .filter((id) => id !== 'phone')
      .map((id): [string, string] => ['DELETE', `/api/keys/devices/${encodeURIComponent(id.replace(/[\ud800-\udfff]/g, '?'))}`]),
  )
  .map(([method, path]): Generated => ({ app: 'plain', method, path, options: { token: goodToken }, mustBeClientError: false }));

const anyBadRequest = fc.oneof(
  { arbitrary: registrationPut, weight: 4 },
  { arbitrary: rawPut, weight: 2 },
  { arbitrary: unauthenticated, weight: 3 },
  { arbitrary: harmlessAuthenticated, weight: 1 },
);

// ---- the property --------------------------------------------------------------------------

describe('randomized bad input', () => {
  it(`${runs} requests: no 5xx, every response as documented, no row changed`, async () => {
    const before = await snapshot(db.pool);
    const seen = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(anyBadRequest, async (request) => {
        const api = request.app === 'plain' ? plain : withFcm;
        const response = await api.request(request.method, request.path, request.options);
        seen.set(response.status, (seen.get(response.status) ?? 0) + 1);
        expect(response.status, `${request.method} ${request.path} → ${response.text.slice(0, 200)}`).toBeLessThan(500);
        if (request.mustBeClientError) expect(response.status, response.text.slice(0, 200)).toBeGreaterThanOrEqual(400);
        if (response.status >= 400 && request.method !== 'HEAD') {
          expect(response.json).toEqual({ error: expect.any(String), message: expect.any(String) });
        }
        assertDocumented(request.method, request.path, response);
      }),
      { numRuns: runs },
    );
    expect(await snapshot(db.pool)).toBe(before);
    // The generators reach every kind of refusal, not just one.
    for (const status of [400, 401, 404, 405, 413, 415])
      expect(seen.get(status) ?? 0, `status ${status} never seen: ${JSON.stringify([...seen])}`).toBeGreaterThan(0);
  });
});

/**
 * `GET /api/push/config` and `PUT|GET|DELETE /api/push/registration` on real PostgreSQL and
 * Temporal: every validation rule of the device API as a table (each refusal a 4xx that changes no
 * row), and what a stored registration means — one row per device, created_at kept or
 * restarted, pending rows surviving a transport switch, the device's workflow started.
 */
import { vapidPrivateKey } from '../../support/vapid-key.js';
import { createECDH, randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'slonik';
import type { LookupHost } from '../../../src/api/unifiedpush-endpoint.js';
import { startTestApi, type TestApi, type TestResponse } from '../../support/api.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { signDeviceToken, testJwtSecret } from '../../support/jwt.js';
import { addPending, createDm, createUser, nextId, pendingChannels, registrationId, registrationRowOf, signIn, snapshot } from './host.js';
import { checked } from './openapi.js';
import { historyText, registeredWorkflow, seenWorkflow, terminateAll } from './temporal.js';

const taskQueue = `api-registration-${nextId()}`;

/** Names the tests resolve; everything else does not resolve. */
const dnsTable: Record<string, readonly string[]> = {
  'ntfy.example': ['93.184.215.14', '2606:4700::1111'],
  'internal.example': ['10.0.0.5'],
  'rebind.example': ['93.184.215.14', '127.0.0.1'],
  'metadata.example': ['169.254.169.254'],
};
const lookupHost: LookupHost = async (host) => {
  const addresses = dnsTable[host.toLowerCase()];
  if (addresses === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  return addresses;
};

function receiverKeys(): { p256dh: string; auth: string } {
  const ecdh = createECDH('prime256v1');
  ecdh.generateKeys();
  return { p256dh: ecdh.getPublicKey().toString('base64url'), auth: randomBytes(16).toString('base64url') };
}
const padded = (text: string) => text.padEnd(Math.ceil(text.length / 4) * 4, '=');
const endpoint = (suffix = randomBytes(8).toString('hex')) => `https://ntfy.example/up${suffix}?up=1`;
const fcmToken = () => `fcm-${randomBytes(60).toString('base64url')}:APA91b${randomBytes(40).toString('base64url')}`;

let db: TestDatabase;
let plain: TestApi; // production defaults: fcm off, https only, no private addresses
let withFcm: TestApi; // FCM_PROJECT_ID set
let development: TestApi; // PUSH_UP_ALLOW_HTTP + PUSH_UP_ALLOW_PRIVATE
let user: string;
const secretsSent: string[] = [];

beforeAll(async () => {
  db = await freshDatabase();
  // One user makes every request of this file, through three apis that share the per-user limit.
  const rateLimit = { perSecond: 10_000 };
  plain = await startTestApi({ db, taskQueue, lookupHost, rateLimit });
  withFcm = await startTestApi({ db, taskQueue, lookupHost, rateLimit, env: { FCM_PROJECT_ID: 'zippchat-test' } });
  development = await startTestApi({ db, taskQueue, lookupHost, rateLimit, env: { PUSH_UP_ALLOW_HTTP: 'true', PUSH_UP_ALLOW_PRIVATE: 'true' } });
  user = await createUser(db.pool);
});

afterAll(async () => {
  await terminateAll(plain.temporal.client, taskQueue);
  for (const api of [plain, withFcm, development]) await api?.close();
  await db?.drop();
});

const tokenFor = (userId: string, deviceId: string) => signDeviceToken({ userId, deviceId, secret: testJwtSecret });

/** A `PUT` as the device's app makes it, after signing in (it has a live session). */
async function put(api: TestApi, deviceId: string, body: unknown, userId = user): Promise<TestResponse> {
  await signIn(db.pool, userId, deviceId);
  return putWithoutSignIn(api, userId, deviceId, body);
}

async function putWithoutSignIn(api: TestApi, userId: string, deviceId: string, body: unknown): Promise<TestResponse> {
  if (typeof body === 'object' && body !== null) {
    for (const key of ['token', 'p256dh', 'auth'] as const) {
      const value = (body as Record<string, unknown>)[key];
      if (typeof value === 'string' && value.length > 8) secretsSent.push(value);
    }
  }
  return checked(api)('PUT', '/api/push/registration', {
    token: await tokenFor(userId, deviceId),
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

describe('GET /api/push/config', () => {
  it('says fcm: false without FCM_PROJECT_ID and true with it; UnifiedPush always', async () => {
    const token = await tokenFor(user, 'any');
    expect((await checked(plain)('GET', '/api/push/config', { token })).json).toEqual({ fcm: false, unifiedpush: true });
    expect((await checked(withFcm)('GET', '/api/push/config', { token })).json).toEqual({ fcm: true, unifiedpush: true });
  });

  it('adds the VAPID public key when the instance has one', async () => {
    const ecdh = createECDH('prime256v1');
    ecdh.generateKeys();
    const api = await startTestApi({
      db,
      taskQueue,
      env: { PUSH_VAPID_PRIVATE_KEY: vapidPrivateKey(ecdh), PUSH_VAPID_SUBJECT: 'mailto:ops@chat.example' },
    });
    try {
      const response = await checked(api)('GET', '/api/push/config', { token: await tokenFor(user, 'any') });
      expect(response.json).toEqual({ fcm: false, unifiedpush: true, vapid_public_key: ecdh.getPublicKey().toString('base64url') });
      expect(response.headers['cache-control']).toBe('no-store');
    } finally {
      await api.close();
    }
  });
});

describe('PUT /api/push/registration: validation', () => {
  const device = 'matrix-phone';
  let before: string;

  beforeAll(async () => {
    // A registration with state a bad request could damage: keys, an outstanding wake,
    // failures, a pending row. Every refusal below must leave all of it untouched.
    expect((await put(plain, device, { transport: 'unifiedpush', token: endpoint(), ...receiverKeys() })).status).toBe(200);
    const registration = await registrationId(db.pool, user, device);
    await db.pool.query(sql.unsafe`UPDATE push_registrations SET wake_outstanding = true, failures = 3 WHERE id = ${registration}`);
    await addPending(db.pool, registration, [
      { channelId: await createDm(db.pool, [user, await createUser(db.pool)]), isDm: true, firstAt: new Date() },
    ]);
    before = await snapshot(db.pool);
  });

  const keys = receiverKeys();
  const offCurve = (() => {
    const point = Buffer.from(receiverKeys().p256dh, 'base64url');
    point[64] = point[64]! ^ 1;
    return point.toString('base64url');
  })();
  const standardBase64Key = (() => {
    for (;;) {
      const candidate = receiverKeys().p256dh;
      if (/[-_]/.test(candidate)) return candidate.replace(/-/g, '+').replace(/_/g, '/');
    }
  })();
  const compressed = (() => {
    const ecdh = createECDH('prime256v1');
    ecdh.generateKeys();
    return ecdh.getPublicKey(null, 'compressed').toString('base64url');
  })();
  const wrongPrefix = (() => {
    const point = Buffer.from(receiverKeys().p256dh, 'base64url');
    point[0] = 0x05;
    return point.toString('base64url');
  })();
  const up = (token: string, extra: Record<string, unknown> = {}) => ({ transport: 'unifiedpush', token, ...extra });

  type Row = [name: string, app: 'plain' | 'withFcm', body: unknown, message: RegExp];
  const refused: Row[] = [
    // transport
    ['no transport', 'plain', { token: endpoint() }, /^transport: /],
    ['an unknown transport', 'plain', { transport: 'apns', token: endpoint() }, /^transport: must be "fcm" or "unifiedpush"/],
    ['a transport in capitals', 'plain', { transport: 'FCM', token: fcmToken() }, /^transport: /],
    ['a transport that is not a string', 'plain', { transport: 1, token: endpoint() }, /^transport: /],
    ['fcm where the instance reports fcm: false', 'plain', { transport: 'fcm', token: fcmToken() }, /^transport: fcm is not available/],
    // token
    ['no token', 'plain', { transport: 'unifiedpush' }, /^token: is required/],
    ['a token that is not a string', 'plain', { transport: 'unifiedpush', token: 42 }, /^token: must be a string/],
    ['a null token', 'plain', { transport: 'unifiedpush', token: null }, /^token: /],
    // UnifiedPush endpoint URL
    ['an http:// endpoint without PUSH_UP_ALLOW_HTTP', 'plain', up('http://ntfy.example/up1'), /^token: must be an https:\/\/ URL/],
    ['an ftp:// endpoint', 'plain', up('ftp://ntfy.example/up1'), /^token: must be an absolute https:\/\/ URL/],
    ['a relative endpoint', 'plain', up('/up/abc'), /^token: must be an absolute/],
    ['an endpoint without "//"', 'plain', up('https:ntfy.example/up1'), /^token: must be an absolute/],
    ['an endpoint without a host', 'plain', up('https:///up1'), /^token: must be an absolute/],
    ['an empty endpoint', 'plain', up(''), /^token: must be an absolute/],
    [
      'an endpoint over 2048 bytes',
      'plain',
      up(`https://ntfy.example/${'a'.repeat(2049 - 'https://ntfy.example/'.length)}`),
      /^token: must be at most 2048 bytes/,
    ],
    [
      'an endpoint over 2048 bytes in UTF-8 (fewer characters)',
      'plain',
      up(`https://ntfy.example/${'é'.repeat(1020)}`),
      /^token: must be at most 2048 bytes/,
    ],
    ['an endpoint with credentials', 'plain', up('https://user:secret@ntfy.example/up1'), /^token: must not carry credentials/],
    ['an endpoint with whitespace', 'plain', up('https://ntfy.example/up 1'), /^token: must be a URL without whitespace/],
    ['an endpoint with a control character', 'plain', up('https://ntfy.example/up\u0000'), /^token: must be a URL without whitespace, control/],
    [
      'an endpoint with a backslash',
      'plain',
      up('https://ntfy.example\\@internal.example/'),
      /^token: must be a URL without whitespace, control characters or backslashes/,
    ],
    ['an endpoint with an invalid port', 'plain', up('https://ntfy.example:70000/up'), /^token: is not a valid URL/],
    // addresses (PUSH_UP_ALLOW_PRIVATE=false)
    ['a loopback literal', 'plain', up('https://127.0.0.1/up'), /^token: must not point to a .*loopback/],
    ['an IPv6 loopback literal', 'plain', up('https://[::1]/up'), /^token: must not point to/],
    ['an IPv4-mapped private literal', 'plain', up('https://[::ffff:10.0.0.1]/up'), /^token: must not point to/],
    ['the unspecified address', 'plain', up('https://0.0.0.0/up'), /^token: must not point to/],
    ['a link-local literal (cloud metadata)', 'plain', up('https://169.254.169.254/latest'), /^token: must not point to .*link-local/],
    ['a private literal', 'plain', up('https://192.168.1.10/up'), /^token: must not point to .*private/],
    [
      'a decimal IPv4 form of loopback (only dotted-decimal IPv4 is a host)',
      'plain',
      up('https://2130706433/up'),
      /^token: must have a host that is a DNS name in ASCII, a dotted-decimal IPv4 address or a bracketed IPv6 address/,
    ],
    ['a hex IPv4 form of loopback', 'plain', up('https://0x7f.1/up'), /^token: must have a host that is a DNS name/],
    [
      'a non-ASCII host (an IDN goes as its xn-- labels)',
      'plain',
      up('https://ntfy.bücher.example/up'),
      /^token: must have a host that is a DNS name in ASCII/,
    ],
    ['an endpoint with characters RFC 3986 does not allow', 'plain', up('https://ntfy.example/up{1}'), /^token: must be an RFC 3986 URI/],
    [
      'an xn-- label that is not valid IDNA',
      'plain',
      up('https://xn--zz.example/up'),
      /^token: has a host name that is not a valid internationalized domain name \(IDNA\)/,
    ],
    ['a name resolving to a private address', 'plain', up('https://internal.example/up'), /^token: must not point to .*private/],
    ['a name with a loopback address among public ones', 'plain', up('https://rebind.example/up'), /^token: must not point to .*loopback/],
    ['a name resolving to cloud metadata', 'plain', up('https://metadata.example/up'), /^token: must not point to .*link-local/],
    ['a name that does not resolve', 'plain', up('https://nowhere.example/up'), /^token: has a host name that does not resolve/],
    // receiver keys
    ['p256dh without auth', 'plain', up(endpoint(), { p256dh: keys.p256dh }), /^auth: p256dh and auth go together/],
    ['auth without p256dh', 'plain', up(endpoint(), { auth: keys.auth }), /^p256dh: p256dh and auth go together/],
    [
      'a p256dh off the curve',
      'plain',
      up(endpoint(), { ...keys, p256dh: offCurve }),
      /^p256dh: must be base64url of a 65-byte uncompressed point on P-256/,
    ],
    ['a compressed p256dh', 'plain', up(endpoint(), { ...keys, p256dh: compressed }), /^p256dh: /],
    ['a p256dh with the wrong prefix byte', 'plain', up(endpoint(), { ...keys, p256dh: wrongPrefix }), /^p256dh: /],
    ['a p256dh in standard base64', 'plain', up(endpoint(), { ...keys, p256dh: standardBase64Key }), /^p256dh: /],
    ['a p256dh of 64 bytes', 'plain', up(endpoint(), { ...keys, p256dh: randomBytes(64).toString('base64url') }), /^p256dh: /],
    ['a p256dh that is not a string', 'plain', up(endpoint(), { ...keys, p256dh: 65 }), /^p256dh: must be a base64url string/],
    [
      'an auth of 15 bytes',
      'plain',
      up(endpoint(), { ...keys, auth: randomBytes(15).toString('base64url') }),
      /^auth: must be base64url of 16 bytes/,
    ],
    [
      'an auth of 17 bytes',
      'plain',
      up(endpoint(), { ...keys, auth: randomBytes(17).toString('base64url') }),
      /^auth: must be base64url of 16 bytes/,
    ],
    ['an auth that is not base64url', 'plain', up(endpoint(), { ...keys, auth: 'not base64url at all!!' }), /^auth: /],
    ['an auth with bad padding', 'plain', up(endpoint(), { ...keys, auth: `${keys.auth}=` }), /^auth: /],
    // FCM token
    ['an empty FCM token', 'withFcm', { transport: 'fcm', token: '' }, /^token: must not be empty/],
    ['an FCM token with a space', 'withFcm', { transport: 'fcm', token: 'abc def' }, /^token: must not contain whitespace/],
    ['an FCM token with a newline', 'withFcm', { transport: 'fcm', token: 'abc\ndef' }, /^token: must not contain whitespace/],
    ['an FCM token with a NUL', 'withFcm', { transport: 'fcm', token: 'abc\u0000def' }, /^token: must not contain whitespace or control/],
    ['an FCM token over 2048 bytes', 'withFcm', { transport: 'fcm', token: 'a'.repeat(2049) }, /^token: must be at most 2048 bytes/],
    ['an FCM token that is not ASCII', 'withFcm', { transport: 'fcm', token: 'abcé' }, /^token: must be an FCM registration token/],
    ['printable text as an FCM token', 'withFcm', { transport: 'fcm', token: 'garbage-21' }, /^token: must be an FCM registration token/],
    ['an FCM token without its instance id', 'withFcm', { transport: 'fcm', token: `APA91b${'x'.repeat(140)}` }, /^token: must be an FCM/],
    ['an FCM token of another prefix', 'withFcm', { transport: 'fcm', token: `dQw4w9WgXcQ:BPA91b${'x'.repeat(140)}` }, /^token: must be an FCM/],
    ['an endpoint URL as an FCM token', 'withFcm', { transport: 'fcm', token: endpoint() }, /^token: must be an FCM registration token/],
    [
      'FCM with an empty p256dh',
      'withFcm',
      { transport: 'fcm', token: fcmToken(), p256dh: '', auth: keys.auth },
      /^p256dh: keys are for unifiedpush only/,
    ],
    ['FCM with receiver keys', 'withFcm', { transport: 'fcm', token: fcmToken(), ...keys }, /^p256dh: keys are for unifiedpush only/],
    // the body as a whole
    ['a JSON array', 'plain', [{ transport: 'unifiedpush', token: endpoint() }], /^body: must be a JSON object/],
    ['a JSON string', 'plain', 'unifiedpush', /^body: must be a JSON object/],
    ['JSON null', 'plain', null, /^body: must be a JSON object/],
  ];

  it.each(refused)('refuses %s with 400 and changes nothing', async (_name, app, body, message) => {
    const api = app === 'plain' ? plain : withFcm;
    const response = await put(api, device, body);
    expect(response.status, response.text).toBe(400);
    expect(response.json).toEqual({ error: 'invalid_request', message: expect.stringMatching(message) });
    expect(await snapshot(db.pool)).toBe(before);
  });

  type RawRow = [name: string, headers: Record<string, string>, body: string | Buffer, status: number, error: string];
  const raw: RawRow[] = [
    ['malformed JSON', { 'content-type': 'application/json' }, '{"transport": "fcm",', 400, 'invalid_request'],
    ['an empty body', { 'content-type': 'application/json' }, '', 400, 'invalid_request'],
    ['trailing garbage after the JSON', { 'content-type': 'application/json' }, '{"transport":"fcm","token":"x"} x', 400, 'invalid_request'],
    ['no Content-Type', {}, JSON.stringify(up(endpoint())), 415, 'unsupported_media_type'],
    ['text/plain', { 'content-type': 'text/plain' }, JSON.stringify(up(endpoint())), 415, 'unsupported_media_type'],
    ['a form', { 'content-type': 'application/x-www-form-urlencoded' }, 'transport=unifiedpush', 415, 'unsupported_media_type'],
    ['a JSON subtype', { 'content-type': 'application/merge-patch+json' }, JSON.stringify(up(endpoint())), 415, 'unsupported_media_type'],
    [
      'a charset other than UTF-8',
      { 'content-type': 'application/json; charset=iso-8859-1' },
      JSON.stringify(up(endpoint())),
      415,
      'unsupported_media_type',
    ],
    [
      'a gzip content coding',
      { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      JSON.stringify(up(endpoint())),
      415,
      'unsupported_media_type',
    ],
    [
      'a body over 4096 bytes',
      { 'content-type': 'application/json' },
      JSON.stringify({ ...up(endpoint()), padding: 'x'.repeat(5000) }),
      413,
      'payload_too_large',
    ],
    ['a body of 1 MiB', { 'content-type': 'application/json' }, Buffer.alloc(1 << 20, 0x20), 413, 'payload_too_large'],
  ];

  it.each(raw)('refuses %s and changes nothing', async (_name, headers, body, status, error) => {
    const response = await checked(plain)('PUT', '/api/push/registration', { token: await tokenFor(user, device), headers, body });
    expect(response.status, response.text).toBe(status);
    expect((response.json as { error: string }).error).toBe(error);
    expect(await snapshot(db.pool)).toBe(before);
  });

  it('refuses a Content-Length far over the limit before reading the body', async () => {
    const response = await checked(plain)('PUT', '/api/push/registration', {
      token: await tokenFor(user, device),
      headers: { 'content-type': 'application/json', 'content-length': '1000000000' },
    });
    expect(response.status).toBe(413);
    expect(await snapshot(db.pool)).toBe(before);
  });

  it('stops reading a chunked body at the limit (no Content-Length to trust)', async () => {
    const url = new URL(plain.url);
    const token = await tokenFor(user, device);
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(
        {
          host: url.hostname,
          port: url.port,
          method: 'PUT',
          path: '/api/push/registration',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', (error: NodeJS.ErrnoException) => (error.code === 'ECONNRESET' || error.code === 'EPIPE' ? undefined : reject(error)));
      for (let i = 0; i < 16; i++) req.write(Buffer.alloc(1024, 0x20));
      req.end();
    });
    expect(status).toBe(413);
    expect(await snapshot(db.pool)).toBe(before);
  });

  it('refuses a host that the system resolver maps to loopback (localhost)', async () => {
    const api = await startTestApi({ db, taskQueue });
    try {
      const response = await put(api, device, up('https://localhost/up'));
      expect(response.status).toBe(400);
      expect((response.json as { message: string }).message).toMatch(/^token: must not point to/);
      expect(await snapshot(db.pool)).toBe(before);
    } finally {
      await api.close();
    }
  });

  type Accepted = [name: string, app: 'plain' | 'withFcm' | 'development', body: Record<string, unknown>, encrypted: boolean | undefined];
  const accepted: Accepted[] = [
    ['UnifiedPush without keys', 'plain', up(endpoint()), false],
    ['UnifiedPush with null keys', 'plain', up(endpoint(), { p256dh: null, auth: null }), false],
    ['UnifiedPush with unpadded keys', 'plain', up(endpoint(), receiverKeys()), true],
    [
      'UnifiedPush with padded keys',
      'plain',
      up(endpoint(), (({ p256dh, auth }) => ({ p256dh: padded(p256dh), auth: padded(auth) }))(receiverKeys())),
      true,
    ],
    ['an endpoint of exactly 2048 bytes', 'plain', up(`https://ntfy.example/${'a'.repeat(2048 - 'https://ntfy.example/'.length)}`), false],
    ['a public IP literal', 'plain', up('https://93.184.215.14:8443/up'), false],
    ['a public IPv6 literal', 'plain', up('https://[2606:4700::1111]/up'), false],
    ['a scheme and host in capitals, a port, a query and a fragment', 'plain', up('HTTPS://NTFY.EXAMPLE:443/up%20x?a=1&b=/?#frag'), false],
    ['http:// where PUSH_UP_ALLOW_HTTP is set', 'development', up('http://ntfy.example/up'), false],
    ['a loopback endpoint where PUSH_UP_ALLOW_PRIVATE is set', 'development', up('http://127.0.0.1:2586/up'), false],
    ['an unresolvable name where PUSH_UP_ALLOW_PRIVATE is set (nothing is resolved)', 'development', up('https://ntfy.lan/up'), false],
    ['FCM where the instance has it', 'withFcm', { transport: 'fcm', token: fcmToken() }, undefined],
    ['FCM with null keys', 'withFcm', { transport: 'fcm', token: fcmToken(), p256dh: null, auth: null }, undefined],
    ['an FCM token of exactly 2048 bytes', 'withFcm', { transport: 'fcm', token: `dQw4w9WgXcQ:APA91b${'b'.repeat(2048 - 18)}` }, undefined],
  ];

  it.each(accepted)('accepts %s, stores it as given and starts the workflow', async (_name, app, body, encrypted) => {
    const api = { plain, withFcm, development }[app];
    const deviceId = `accepted-${nextId()}`;
    const response = await put(api, deviceId, body);
    expect(response.status, response.text).toBe(200);
    expect(response.json).toEqual({
      transport: body['transport'],
      created_at: expect.any(String),
      updated_at: expect.any(String),
      ...(encrypted === undefined ? {} : { encrypted }),
      last_woken_at: null,
      last_drained_at: null,
      delivery: { state: 'ok', failures: 0, wakes_since_drain: 0, priority_lowered: false },
    });
    const row = await registrationRowOf(db.pool, user, deviceId);
    expect(row?.token).toBe(body['token']);
    const p256dh = body['p256dh'];
    expect(row?.up_p256dh?.toString('base64url') ?? null).toBe(typeof p256dh === 'string' ? p256dh.replace(/=+$/, '') : null);
    const workflow = await registeredWorkflow(api.temporal.client, user, deviceId);
    expect(workflow.status).toBe('RUNNING');
  });
});

describe('PUT /api/push/registration: what is stored', () => {
  it('creates one row for the device and starts its workflow with its search attributes, and no secret', async () => {
    const deviceId = `phone-${nextId()}`;
    const secrets = { token: endpoint(), ...receiverKeys() };
    const response = await put(plain, deviceId, { transport: 'unifiedpush', ...secrets });
    expect(response.status).toBe(200);
    const body = response.json as { created_at: string; updated_at: string };
    expect(body).toEqual({
      transport: 'unifiedpush',
      created_at: body.created_at,
      updated_at: body.updated_at,
      encrypted: true,
      last_woken_at: null,
      last_drained_at: null,
      delivery: { state: 'ok', failures: 0, wakes_since_drain: 0, priority_lowered: false },
    });
    expect(body.created_at).toBe(body.updated_at);
    const workflow = await registeredWorkflow(plain.temporal.client, user, deviceId);
    expect(workflow).toEqual({
      status: 'RUNNING',
      taskQueue,
      searchAttributes: { userId: user, deviceId, transport: 'unifiedpush' },
      signals: [{ name: 'registered', arg: { transport: 'unifiedpush' } }],
    });
    const history = await historyText(plain.temporal.client, user, deviceId);
    expect(history).toContain(deviceId);
    for (const secret of Object.values(secrets)) expect(history).not.toContain(secret);
    expect(history).not.toContain('ntfy.example');
  });

  it('re-registering the same token keeps created_at, failures and an outstanding wake, and bumps updated_at', async () => {
    const deviceId = `phone-${nextId()}`;
    const token = endpoint();
    const first = (await put(plain, deviceId, { transport: 'unifiedpush', token })).json as { created_at: string; updated_at: string };
    await db.pool.query(
      sql.unsafe`UPDATE push_registrations SET failures = 7, wake_outstanding = true WHERE user_id = ${user} AND device_id = ${deviceId}`,
    );
    const second = (await put(plain, deviceId, { transport: 'unifiedpush', token })).json as { created_at: string; updated_at: string };
    expect(second.created_at).toBe(first.created_at);
    expect(Date.parse(second.updated_at)).toBeGreaterThan(Date.parse(first.updated_at));
    const row = await registrationRowOf(db.pool, user, deviceId);
    // Re-registering proves nothing about the endpoint: an app restarting more often than its
    // back-offs add up must still reach the ten failures that prune it.
    expect(row).toMatchObject({ failures: 7, wake_outstanding: true });
  });

  it.each([
    ['new keys', () => receiverKeys()],
    ['keys given up', () => ({})],
  ])('the same endpoint with %s clears the outstanding wake (the phone cannot read it), and keeps the failures', async (_name, keysNow) => {
    const deviceId = `phone-${nextId()}`;
    const token = endpoint();
    await put(plain, deviceId, { transport: 'unifiedpush', token, ...receiverKeys() });
    await db.pool.query(
      sql.unsafe`UPDATE push_registrations SET wake_outstanding = true, failures = 7 WHERE user_id = ${user} AND device_id = ${deviceId}`,
    );
    const keys = keysNow();
    expect((await put(plain, deviceId, { transport: 'unifiedpush', token, ...keys })).status).toBe(200);
    const row = await registrationRowOf(db.pool, user, deviceId);
    // Woken like a new endpoint: its workflow, told by the `registered` signal, looks within the interval.
    expect(row).toMatchObject({ token, wake_outstanding: false, failures: 7 });
    expect(row?.up_p256dh?.toString('base64url') ?? null).toBe('p256dh' in keys ? keys.p256dh : null);
  });

  it('a new endpoint replaces token and keys and clears the outstanding wake (it went to the old endpoint) and the failures', async () => {
    const deviceId = `phone-${nextId()}`;
    const first = (await put(plain, deviceId, { transport: 'unifiedpush', token: endpoint(), ...receiverKeys() })).json as { created_at: string };
    await db.pool.query(
      sql.unsafe`UPDATE push_registrations SET wake_outstanding = true, failures = 7 WHERE user_id = ${user} AND device_id = ${deviceId}`,
    );
    const newEndpoint = endpoint();
    const second = (await put(plain, deviceId, { transport: 'unifiedpush', token: newEndpoint })).json as { created_at: string; encrypted: boolean };
    expect(second).toMatchObject({ created_at: first.created_at, encrypted: false });
    expect(await registrationRowOf(db.pool, user, deviceId)).toMatchObject({
      token: newEndpoint,
      up_p256dh: null,
      up_auth: null,
      wake_outstanding: false,
      failures: 0,
    });
  });

  it('switching transport replaces transport, token, keys and created_at, and keeps what is pending', async () => {
    const deviceId = `phone-${nextId()}`;
    const first = (await put(withFcm, deviceId, { transport: 'unifiedpush', token: endpoint(), ...receiverKeys() })).json as { created_at: string };
    await registeredWorkflow(withFcm.temporal.client, user, deviceId);
    const before = await registrationRowOf(db.pool, user, deviceId);
    const dm = await createDm(db.pool, [user, await createUser(db.pool)]);
    await addPending(db.pool, before!.id, [{ channelId: dm, isDm: true, firstAt: new Date() }]);
    await db.pool.query(sql.unsafe`UPDATE push_registrations SET wake_outstanding = true, failures = 2 WHERE id = ${before!.id}`);

    const token = fcmToken();
    const response = await put(withFcm, deviceId, { transport: 'fcm', token });
    expect(response.status).toBe(200);
    const second = response.json as { created_at: string; transport: string };
    expect(second.transport).toBe('fcm');
    expect(Date.parse(second.created_at)).toBeGreaterThan(Date.parse(first.created_at));
    expect(second).not.toHaveProperty('encrypted');
    const after = await registrationRowOf(db.pool, user, deviceId);
    expect(after).toMatchObject({ id: before!.id, transport: 'fcm', token, up_p256dh: null, up_auth: null, wake_outstanding: false, failures: 0 });
    expect(await pendingChannels(db.pool, before!.id)).toEqual([dm]);
    const workflow = await registeredWorkflow(withFcm.temporal.client, user, deviceId, 2);
    expect(workflow.signals).toEqual([
      { name: 'registered', arg: { transport: 'unifiedpush' } },
      { name: 'registered', arg: { transport: 'fcm' } },
    ]);
  });

  it('ignores user_id and device_id in the body: the device is the token’s', async () => {
    const other = await createUser(db.pool);
    const deviceId = `phone-${nextId()}`;
    const response = await put(plain, deviceId, { transport: 'unifiedpush', token: endpoint(), user_id: other, device_id: 'someone-else' });
    expect(response.status).toBe(200);
    expect(await registrationRowOf(db.pool, user, deviceId)).not.toBeNull();
    expect(await registrationRowOf(db.pool, user, 'someone-else')).toBeNull();
    expect(await registrationRowOf(db.pool, other, 'someone-else')).toBeNull();
    expect(await registrationRowOf(db.pool, other, deviceId)).toBeNull();
  });

  it('refuses a valid token whose user does not exist, storing nothing', async () => {
    const ghost = nextId();
    const before = await snapshot(db.pool);
    const response = await putWithoutSignIn(plain, ghost, 'phone', { transport: 'unifiedpush', token: endpoint() });
    expect(response.status).toBe(401);
    expect(await snapshot(db.pool)).toBe(before);
    expect(await seenWorkflow(plain.temporal.client, ghost, 'phone')).toBeUndefined();
  });

  it.each(['none', 'revoked', 'expired'] as const)('refuses a device whose only session is %s: 401, nothing stored, no workflow', async (session) => {
    const deviceId = `phone-${nextId()}`;
    if (session === 'revoked') {
      await db.pool.query(
        sql.unsafe`INSERT INTO refresh_tokens (user_id, device_id, expires_at, revoked_at) VALUES (${user}, ${deviceId}, now() + interval '30 days', now())`,
      );
    }
    if (session === 'expired') {
      await db.pool.query(
        sql.unsafe`INSERT INTO refresh_tokens (user_id, device_id, expires_at) VALUES (${user}, ${deviceId}, now() - interval '1 second')`,
      );
    }
    // Another device of the same user with a live session does not count.
    await signIn(db.pool, user, `${deviceId}-other`);
    const before = await snapshot(db.pool);
    const response = await putWithoutSignIn(plain, user, deviceId, { transport: 'unifiedpush', token: endpoint() });
    expect(response.status).toBe(401);
    expect(response.json).toEqual({ error: 'unauthorized', message: expect.stringContaining('no live session') });
    expect(await snapshot(db.pool)).toBe(before);
    expect(await seenWorkflow(plain.temporal.client, user, deviceId)).toBeUndefined();
  });

  it('a device whose session was revoked cannot re-create its registration with a token still valid', async () => {
    const deviceId = `phone-${nextId()}`;
    expect((await put(plain, deviceId, { transport: 'unifiedpush', token: endpoint() })).status).toBe(200);
    const jwt = await tokenFor(user, deviceId);
    expect((await checked(plain)('DELETE', `/api/keys/devices/${deviceId}`, { token: jwt })).status).toBe(204);
    const response = await putWithoutSignIn(plain, user, deviceId, { transport: 'unifiedpush', token: endpoint() });
    expect(response.status).toBe(401);
    expect(await registrationRowOf(db.pool, user, deviceId)).toBeNull();
  });
});

describe('GET and DELETE /api/push/registration', () => {
  it('GET shows the registration without its token or keys, and 404 when there is none', async () => {
    const deviceId = `phone-${nextId()}`;
    const token = await tokenFor(user, deviceId);
    const missing = await checked(plain)('GET', '/api/push/registration', { token });
    expect(missing.status).toBe(404);
    expect((missing.json as { error: string }).error).toBe('not_found');
    const stored = (await put(plain, deviceId, { transport: 'unifiedpush', token: endpoint(), ...receiverKeys() })).json;
    const shown = await checked(plain)('GET', '/api/push/registration', { token });
    expect(shown.status).toBe(200);
    expect(shown.json).toEqual(stored);
  });

  it('DELETE removes the registration and its pending rows, tells the workflow to stop, and is idempotent', async () => {
    const deviceId = `phone-${nextId()}`;
    const token = await tokenFor(user, deviceId);
    await put(plain, deviceId, { transport: 'unifiedpush', token: endpoint() });
    await registeredWorkflow(plain.temporal.client, user, deviceId);
    const registration = await registrationId(db.pool, user, deviceId);
    await addPending(db.pool, registration, [
      { channelId: await createDm(db.pool, [user, await createUser(db.pool)]), isDm: true, firstAt: new Date() },
    ]);

    for (let attempt = 0; attempt < 2; attempt++) {
      const response = await checked(plain)('DELETE', '/api/push/registration', { token });
      expect(response.status).toBe(204);
      expect(response.text).toBe('');
    }
    expect(await registrationRowOf(db.pool, user, deviceId)).toBeNull();
    expect(await pendingChannels(db.pool, registration)).toEqual([]);
    const workflow = await seenWorkflow(plain.temporal.client, user, deviceId);
    expect(workflow?.signals.map((s) => s.name)).toEqual(['registered', 'stop', 'stop']);
    expect((await checked(plain)('GET', '/api/push/registration', { token })).status).toBe(404);
  });
});

describe('secrets', () => {
  it('no push token, endpoint or key was ever handed to the logger', () => {
    expect(secretsSent.length).toBeGreaterThan(50);
    for (const api of [plain, withFcm, development]) {
      const logs = api.logs.join('\n');
      expect(logs).toContain('registration stored');
      for (const secret of secretsSent) expect(logs).not.toContain(secret);
    }
  });
});

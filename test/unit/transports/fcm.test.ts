/**
 * The FCM transport against a fake Google on loopback: the OAuth token endpoint of the key
 * file's token_uri (verifying the RS256 assertion with the account's public key) and an FCM
 * endpoint that checks bearer, path and exact body and replays scripted errors.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createSenders, type TransportOptions } from '../../../src/transports/index.js';
import { breakerOpen, breakerTrips } from '../../../src/transports/metrics.js';
import type { ProviderAnswer } from '../../../src/transports/types.js';
import { fcmError, googleStatusError, startFakeFcm, type FcmAnswer } from '../../../devstack/stand-ins/fcm.js';
import { createServiceAccount, startGoogleOAuth } from '../../../devstack/stand-ins/google-oauth.js';
import { captureLog, fakeFcmToken, fcmRegistration, inBatches, workerConfig } from './helpers.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

// One RSA key for the file: generating it is the slowest step of a test.
const account = createServiceAccount('zippchat-test');

async function world(options: TransportOptions = {}, authorize?: (bearer: string) => boolean, expiresInSeconds?: number) {
  const oauth = await startGoogleOAuth({ account, expiresInSeconds });
  const fcm = await startFakeFcm({ projectId: account.projectId, isAuthorized: authorize ?? ((bearer) => oauth.isValid(bearer)) });
  const captured = captureLog();
  const config = workerConfig({ FCM_PROJECT_ID: account.projectId, FCM_CREDENTIALS_JSON: account.keyFile(oauth.url), FCM_ENDPOINT: fcm.url });
  const transports = createSenders(config, captured.log, options);
  cleanups.push(async () => {
    await transports.close();
    await fcm.close();
    await oauth.close();
  });
  return { oauth, fcm, captured, transport: transports.fcm };
}

describe('FCM on the wire', () => {
  it('posts exactly the designed wake with a bearer from the key file token_uri', async () => {
    const { oauth, fcm, transport } = await world();
    const token = fakeFcmToken();

    expect(await transport.send(fcmRegistration(token), 'high')).toEqual({ kind: 'delivered', status: 200 });
    expect(await transport.send(fcmRegistration(token), 'normal')).toEqual({ kind: 'delivered', status: 200 });

    expect(oauth.problems).toEqual([]);
    expect(fcm.problems).toEqual([]);
    expect(fcm.received.map((r) => r.body)).toEqual([
      `{"message":{"token":"${token}","data":{"v":"1","t":"wake"},"android":{"priority":"HIGH","collapse_key":"wake","ttl":"3600s"}}}`,
      `{"message":{"token":"${token}","data":{"v":"1","t":"wake"},"android":{"priority":"NORMAL","collapse_key":"wake","ttl":"3600s"}}}`,
    ]);
    expect(fcm.received[0]?.path).toBe('/v1/projects/zippchat-test/messages:send');
    expect(oauth.isValid(fcm.received[0]?.bearer ?? '')).toBe(true);
  });

  it('caches the access token: one token request for many sends, even concurrent ones', async () => {
    const { oauth, fcm, transport } = await world();
    await Promise.all(Array.from({ length: 10 }, () => transport.send(fcmRegistration(fakeFcmToken()), 'normal')));
    await transport.send(fcmRegistration(fakeFcmToken()), 'high');
    expect(oauth.received).toHaveLength(1);
    expect(new Set(fcm.received.map((r) => r.bearer)).size).toBe(1);
    expect(fcm.received.every((r) => r.answered === 200)).toBe(true);
  });

  it('sends bodies of one size per priority across 1,000 sends', async () => {
    const { fcm, transport } = await world();
    const registration = fcmRegistration(fakeFcmToken());
    const outcomes = await inBatches(1000, 25, (i) => transport.send(registration, i % 2 === 0 ? 'high' : 'normal'));
    expect(outcomes.every((o) => o.kind === 'delivered')).toBe(true);
    const sizes = (priority: string) => new Set(fcm.received.filter((r) => r.priority === priority).map((r) => r.bodyBytes));
    expect(fcm.received).toHaveLength(1000);
    expect(sizes('HIGH').size).toBe(1);
    expect(sizes('NORMAL').size).toBe(1);
  }, 60_000); // 1,000 requests: seconds on a loaded machine
});

describe('FCM errors → outcomes (through the wire)', () => {
  const now = Date.parse('2026-12-01T12:00:00Z');
  const cases: Array<[string, FcmAnswer, ProviderAnswer]> = [
    ['404 UNREGISTERED', fcmError('UNREGISTERED'), { kind: 'dead', reason: 'FCM 404 UNREGISTERED' }],
    [
      '400 INVALID_ARGUMENT on the token',
      fcmError('INVALID_ARGUMENT', { aboutToken: true }),
      { kind: 'dead', reason: 'FCM 400 INVALID_ARGUMENT (registration token)' },
    ],
    [
      '400 INVALID_ARGUMENT naming the token only in its message',
      fcmError('INVALID_ARGUMENT', { message: 'The registration token is not a valid FCM registration token' }),
      { kind: 'dead', reason: 'FCM 400 INVALID_ARGUMENT (registration token)' },
    ],
    [
      '400 INVALID_ARGUMENT about the payload',
      fcmError('INVALID_ARGUMENT'),
      { kind: 'misconfigured', reason: expect.stringContaining('not about the token') as string },
    ],
    ['403 SENDER_ID_MISMATCH', fcmError('SENDER_ID_MISMATCH'), { kind: 'dead', reason: 'FCM 403 SENDER_ID_MISMATCH' }],
    [
      '429 QUOTA_EXCEEDED without Retry-After: one minute',
      fcmError('QUOTA_EXCEEDED'),
      { kind: 'deferred', cause: 'rate_limited', reason: 'FCM 429 QUOTA_EXCEEDED', retryAfterMs: 60_000 },
    ],
    [
      '429 QUOTA_EXCEEDED, Retry-After 120',
      fcmError('QUOTA_EXCEEDED', { headers: { 'retry-after': '120' } }),
      { kind: 'deferred', cause: 'rate_limited', reason: 'FCM 429 QUOTA_EXCEEDED', retryAfterMs: 120_000 },
    ],
    [
      '429 QUOTA_EXCEEDED, Retry-After 5: still a minute',
      fcmError('QUOTA_EXCEEDED', { headers: { 'retry-after': '5' } }),
      { kind: 'deferred', cause: 'rate_limited', reason: 'FCM 429 QUOTA_EXCEEDED', retryAfterMs: 60_000 },
    ],
    [
      '503 UNAVAILABLE, Retry-After 7',
      fcmError('UNAVAILABLE', { headers: { 'retry-after': '7' } }),
      { kind: 'deferred', cause: 'failing', reason: 'FCM 503 UNAVAILABLE', blame: 'endpoint', retryAfterMs: 7_000 },
    ],
    [
      '503 UNAVAILABLE, Retry-After as an HTTP date',
      fcmError('UNAVAILABLE', { headers: { 'retry-after': new Date(now + 90_000).toUTCString() } }),
      { kind: 'deferred', cause: 'failing', reason: 'FCM 503 UNAVAILABLE', blame: 'endpoint', retryAfterMs: 90_000 },
    ],
    ['500 INTERNAL', fcmError('INTERNAL'), { kind: 'deferred', cause: 'failing', reason: 'FCM 500 INTERNAL', blame: 'endpoint' }],
    [
      '500 UNSPECIFIED_ERROR',
      fcmError('UNSPECIFIED_ERROR'),
      { kind: 'deferred', cause: 'failing', reason: 'FCM 500 UNSPECIFIED_ERROR', blame: 'endpoint' },
    ],
    ['401 THIRD_PARTY_AUTH_ERROR', fcmError('THIRD_PARTY_AUTH_ERROR'), { kind: 'misconfigured', reason: 'FCM 401 THIRD_PARTY_AUTH_ERROR' }],
    [
      '403 PERMISSION_DENIED (status only)',
      googleStatusError(403, 'PERMISSION_DENIED'),
      { kind: 'misconfigured', reason: 'FCM 403 PERMISSION_DENIED' },
    ],
    [
      '404 NOT_FOUND without UNREGISTERED: the project, not the token',
      googleStatusError(404, 'NOT_FOUND'),
      { kind: 'misconfigured', reason: 'FCM 404 NOT_FOUND' },
    ],
    [
      '429 RESOURCE_EXHAUSTED (status only)',
      googleStatusError(429, 'RESOURCE_EXHAUSTED'),
      { kind: 'deferred', cause: 'rate_limited', reason: 'FCM 429 RESOURCE_EXHAUSTED', retryAfterMs: 60_000 },
    ],
    ['502 from a proxy, no JSON', { status: 502, body: 'Bad Gateway' }, { kind: 'deferred', cause: 'failing', reason: 'FCM 502', blame: 'endpoint' }],
    ['400 from a proxy, no JSON', { status: 400, body: 'Bad Request' }, { kind: 'misconfigured', reason: 'FCM 400' }],
  ];

  it.each(cases)('%s', async (_name, answer, expected) => {
    const { oauth, fcm, transport } = await world({ now: () => now });
    fcm.script(answer);
    expect(await transport.send(fcmRegistration(fakeFcmToken()), 'high')).toEqual(expected);
    expect(fcm.received).toHaveLength(1); // no hidden retry loop: retrying is Temporal's
    expect(oauth.received).toHaveLength(1); // only a plain 401 refreshes the token
    expect(fcm.problems).toEqual([]);
  });

  it('times out a send FCM never answers', async () => {
    const { fcm, transport } = await world({ fcmDeadlineMs: 300 });
    fcm.script({ hang: true });
    expect(await transport.send(fcmRegistration(fakeFcmToken()), 'high')).toEqual({
      kind: 'deferred',
      cause: 'failing',
      reason: 'FCM timeout',
      blame: 'network',
    });
  });

  it('reports an unreachable FCM endpoint as failing', async () => {
    const { fcm, transport } = await world();
    await fcm.close();
    expect(await transport.send(fcmRegistration(fakeFcmToken()), 'high')).toEqual({
      kind: 'deferred',
      cause: 'failing',
      reason: 'FCM connection refused',
      blame: 'network',
    });
  });
});

describe('FCM OAuth token', () => {
  it('refreshes the token once on a plain 401 and sends again', async () => {
    const { oauth, fcm, transport } = await world();
    expect(await transport.send(fcmRegistration(fakeFcmToken()), 'high')).toEqual({ kind: 'delivered', status: 200 });
    oauth.revokeAll(); // FCM now refuses the cached token, as after an early expiry

    expect(await transport.send(fcmRegistration(fakeFcmToken()), 'high')).toEqual({ kind: 'delivered', status: 200 });

    expect(oauth.received).toHaveLength(2);
    expect(fcm.received.map((r) => r.answered)).toEqual([200, 401, 200]);
    expect(fcm.received[1]?.bearer).toBe(fcm.received[0]?.bearer);
    expect(fcm.received[2]?.bearer).not.toBe(fcm.received[1]?.bearer);
  });

  it('fetches a new token when the cached one is about to expire', async () => {
    // A token valid for one more minute is inside the 5-minute refresh margin.
    const { oauth, fcm, transport } = await world({}, undefined, 60);
    await transport.send(fcmRegistration(fakeFcmToken()), 'high');
    await transport.send(fcmRegistration(fakeFcmToken()), 'high');
    expect(oauth.received).toHaveLength(2);
    expect(fcm.received.map((r) => r.answered)).toEqual([200, 200]);
    expect(fcm.received[1]?.bearer).not.toBe(fcm.received[0]?.bearer);
  });

  it('gives up with a config error when the fresh token is refused too', async () => {
    const { oauth, fcm, transport } = await world({}, () => false);
    const outcome = await transport.send(fcmRegistration(fakeFcmToken()), 'high');
    expect(outcome).toMatchObject({ kind: 'misconfigured', reason: expect.stringContaining('FCM 401 UNAUTHENTICATED') as string });
    expect(fcm.received.map((r) => r.answered)).toEqual([401, 401]);
    expect(oauth.received).toHaveLength(2);
  });

  it('maps a token endpoint refusing the account to misconfigured, and one that is down to failing', async () => {
    const { oauth, transport } = await world();
    oauth.script({ status: 400, body: { error: 'invalid_grant', error_description: 'Invalid JWT Signature.' } });
    expect(await transport.send(fcmRegistration(fakeFcmToken()), 'high')).toEqual({
      kind: 'misconfigured',
      reason: 'FCM credentials refused: token endpoint answered 400 invalid_grant',
      noToken: true, // its hold ends when the credentials work
    });
    oauth.script({ status: 503 });
    expect(await transport.send(fcmRegistration(fakeFcmToken()), 'high')).toEqual({
      kind: 'deferred',
      cause: 'failing',
      reason: 'OAuth token endpoint answered 503',
      blame: 'token-endpoint',
    });
    expect(await transport.send(fcmRegistration(fakeFcmToken()), 'high')).toEqual({ kind: 'delivered', status: 200 });
  });
});

describe('FCM prune breaker', () => {
  it('stops pruning when token-related 400/403 answers pile up across devices, alerts, and resets after the window', async () => {
    let clock = Date.parse('2026-12-01T12:00:00Z');
    const { fcm, transport, captured } = await world({ now: () => clock, breaker: { floor: 3, windowMs: 60_000 } });
    const tripsBefore = (await breakerTrips.get()).values[0]?.value ?? 0;
    const tokenAnswer = (i: number) => (i % 2 === 0 ? fcmError('INVALID_ARGUMENT', { aboutToken: true }) : fcmError('SENDER_ID_MISMATCH'));
    fcm.script(...Array.from({ length: 6 }, (_, i) => tokenAnswer(i)));

    const kinds: string[] = [];
    for (let i = 0; i < 6; i++) kinds.push((await transport.send(fcmRegistration(fakeFcmToken()), 'high')).kind);

    expect(kinds).toEqual(['dead', 'dead', 'dead', 'misconfigured', 'misconfigured', 'misconfigured']);
    expect((await breakerTrips.get()).values[0]?.value).toBe(tripsBefore + 1);
    expect((await breakerOpen.get()).values[0]?.value).toBe(1);
    expect(captured.lines.filter((line) => line.includes('"alert":"fcm-prune-breaker"') && line.includes('OPEN'))).toHaveLength(1);

    // UNREGISTERED is not guarded: it still prunes while the breaker is open.
    fcm.script(fcmError('UNREGISTERED'));
    expect((await transport.send(fcmRegistration(fakeFcmToken()), 'high')).kind).toBe('dead');

    clock += 61_000;
    fcm.script(fcmError('INVALID_ARGUMENT', { aboutToken: true }));
    expect(await transport.send(fcmRegistration(fakeFcmToken()), 'high')).toEqual({
      kind: 'dead',
      reason: 'FCM 400 INVALID_ARGUMENT (registration token)',
    });
    expect((await breakerOpen.get()).values[0]?.value).toBe(0);
    expect(captured.messages()).toContain('FCM prune breaker closed: token-related answers prune registrations again');
  });
});

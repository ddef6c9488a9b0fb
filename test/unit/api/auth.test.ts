/**
 * Device JWT verification against every configured key type, and the forged
 * tokens a verifier must refuse.
 */
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createBearerVerifier } from '../../../src/api/auth.js';
import { ApiError } from '../../../src/api/errors.js';
import { loadConfig } from '../../../src/config/index.js';
import { signClaims, signDeviceToken, testJwtSecret, unsignedToken } from '../../support/jwt.js';

const base = { DATABASE_URL: 'postgres://localhost/x' };
const hsConfig = loadConfig('api', { ...base, JWT_SECRET: testJwtSecret });
const verifyHs = createBearerVerifier(hsConfig.jwt);
const now = () => Math.floor(Date.now() / 1000);
const good = { sub: '42', device_id: 'phone' };

async function refusal(verify: (header: string) => Promise<unknown>, header: string): Promise<ApiError> {
  const error = await verify(header).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ApiError);
  expect((error as ApiError).status).toBe(401);
  expect((error as ApiError).headers).toEqual({ 'WWW-Authenticate': 'Bearer' });
  return error as ApiError;
}

describe('HS256 (JWT_SECRET)', () => {
  it('accepts a good token and yields its user and device', async () => {
    const token = await signDeviceToken({ userId: '42', deviceId: 'phone', secret: testJwtSecret });
    expect(await verifyHs(`Bearer ${token}`)).toEqual({ userId: '42', deviceId: 'phone' });
    expect(await verifyHs(`bearer ${token}`)).toEqual({ userId: '42', deviceId: 'phone' });
  });

  it('says "expired" for an expired token, so the app knows to refresh', async () => {
    const token = await signDeviceToken({ userId: '42', deviceId: 'phone', secret: testJwtSecret, expiresIn: now() - 60 });
    expect((await refusal(verifyHs, `Bearer ${token}`)).message).toMatch(/expired/);
  });

  const key = { secret: testJwtSecret };
  const forged: [string, () => Promise<string>][] = [
    ['no header at all', async () => ''],
    ['a scheme other than Bearer', async () => `Basic ${Buffer.from('a:b').toString('base64')}`],
    ['Bearer without a token', async () => 'Bearer '],
    ['garbage', async () => 'Bearer not.a.jwt!'],
    ['alg none', async () => `Bearer ${unsignedToken({ ...good, exp: now() + 3600 })}`],
    [
      'the wrong secret',
      async () => `Bearer ${await signDeviceToken({ userId: '42', deviceId: 'phone', secret: 'another-secret-that-is-32-bytes-long!!' })}`,
    ],
    [
      'a tampered payload',
      async () => {
        const [h, , s] = (await signDeviceToken({ userId: '42', deviceId: 'phone', secret: testJwtSecret })).split('.');
        return `Bearer ${h}.${Buffer.from(JSON.stringify({ ...good, sub: '43', exp: now() + 3600 })).toString('base64url')}.${s}`;
      },
    ],
    ['no exp', async () => `Bearer ${await signClaims(good, key)}`],
    ['exp not a number', async () => `Bearer ${await signClaims({ ...good, exp: String(now() + 3600) }, key)}`],
    ['nbf in the future', async () => `Bearer ${await signClaims({ ...good, exp: now() + 3600, nbf: now() + 600 }, key)}`],
    ['no sub', async () => `Bearer ${await signClaims({ device_id: 'phone', exp: now() + 3600 }, key)}`],
    ['sub a number', async () => `Bearer ${await signClaims({ sub: 42, device_id: 'phone', exp: now() + 3600 }, key)}`],
    ['sub not decimal', async () => `Bearer ${await signClaims({ sub: 'alice', device_id: 'phone', exp: now() + 3600 }, key)}`],
    ['sub beyond int8', async () => `Bearer ${await signClaims({ sub: '9223372036854775808', device_id: 'phone', exp: now() + 3600 }, key)}`],
    ['no device_id', async () => `Bearer ${await signClaims({ sub: '42', exp: now() + 3600 }, key)}`],
    ['device_id a number', async () => `Bearer ${await signClaims({ sub: '42', device_id: 7, exp: now() + 3600 }, key)}`],
    ['device_id empty', async () => `Bearer ${await signClaims({ sub: '42', device_id: '', exp: now() + 3600 }, key)}`],
    ['device_id of 129 characters', async () => `Bearer ${await signClaims({ sub: '42', device_id: 'x'.repeat(129), exp: now() + 3600 }, key)}`],
    ['device_id with a control character', async () => `Bearer ${await signClaims({ sub: '42', device_id: 'ph\u0000one', exp: now() + 3600 }, key)}`],
    ['device_id an object', async () => `Bearer ${await signClaims({ sub: '42', device_id: { id: 'x' }, exp: now() + 3600 }, key)}`],
  ];
  it.each(forged)('refuses %s', async (_name, header) => {
    await refusal(verifyHs, await header());
  });
});

describe('public keys (JWT_PUBLIC_KEY) pin their algorithm', () => {
  const pairs: [string, 'RS256' | 'ES256' | 'EdDSA', { privateKey: KeyObject; publicKey: KeyObject }][] = [
    ['RSA', 'RS256', generateKeyPairSync('rsa', { modulusLength: 2048 })],
    ['P-256', 'ES256', generateKeyPairSync('ec', { namedCurve: 'prime256v1' })],
    ['Ed25519', 'EdDSA', generateKeyPairSync('ed25519')],
  ];

  describe.each(pairs)('%s', (_name, algorithm, pair) => {
    const pem = pair.publicKey.export({ type: 'spki', format: 'pem' }).toString();
    const verify = createBearerVerifier(loadConfig('api', { ...base, JWT_PUBLIC_KEY: pem }).jwt);

    it(`accepts ${algorithm} signed by the matching private key`, async () => {
      const token = await signDeviceToken({ userId: '7', deviceId: 'tablet', privateKey: pair.privateKey, algorithm });
      expect(await verify(`Bearer ${token}`)).toEqual({ userId: '7', deviceId: 'tablet' });
    });

    it('refuses HS256 keyed with the public key itself (algorithm confusion)', async () => {
      const token = await signDeviceToken({ userId: '7', deviceId: 'tablet', secretBytes: new TextEncoder().encode(pem), algorithm: 'HS256' });
      await refusal(verify, `Bearer ${token}`);
    });

    it('refuses a token from another key of the same type', async () => {
      const fresh =
        algorithm === 'RS256'
          ? generateKeyPairSync('rsa', { modulusLength: 2048 })
          : algorithm === 'ES256'
            ? generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
            : generateKeyPairSync('ed25519');
      const token = await signDeviceToken({ userId: '7', deviceId: 'tablet', privateKey: fresh.privateKey, algorithm });
      await refusal(verify, `Bearer ${token}`);
    });

    it('refuses an HS256 token from the usual shared secret', async () => {
      await refusal(verify, `Bearer ${await signDeviceToken({ userId: '7', deviceId: 'tablet', secret: testJwtSecret })}`);
    });
  });

  it('refuses a token of another asymmetric algorithm', async () => {
    const [, , rsa] = pairs[0]!;
    const [, , ec] = pairs[1]!;
    const verifyEc = createBearerVerifier(
      loadConfig('api', { ...base, JWT_PUBLIC_KEY: ec.publicKey.export({ type: 'spki', format: 'pem' }).toString() }).jwt,
    );
    await refusal(verifyEc, `Bearer ${await signDeviceToken({ userId: '7', deviceId: 'tablet', privateKey: rsa.privateKey, algorithm: 'RS256' })}`);
  });
});

describe('issuer and audience, when configured', () => {
  const verify = createBearerVerifier(
    loadConfig('api', { ...base, JWT_SECRET: testJwtSecret, JWT_ISSUER: 'https://chat.example', JWT_AUDIENCE: 'zippchat-api' }).jwt,
  );
  const sign = (claims: { issuer?: string; audience?: string }) => signDeviceToken({ userId: '1', deviceId: 'd', secret: testJwtSecret, ...claims });

  it('accepts the configured pair', async () => {
    expect(await verify(`Bearer ${await sign({ issuer: 'https://chat.example', audience: 'zippchat-api' })}`)).toEqual({
      userId: '1',
      deviceId: 'd',
    });
  });

  it.each([
    ['no iss', { audience: 'zippchat-api' }],
    ['another iss', { issuer: 'https://evil.example', audience: 'zippchat-api' }],
    ['no aud', { issuer: 'https://chat.example' }],
    ['another aud', { issuer: 'https://chat.example', audience: 'other' }],
  ])('refuses %s', async (_name, claims) => {
    await refusal(verify, `Bearer ${await sign(claims)}`);
  });

  it('ignores iss and aud when none is configured', async () => {
    expect(await verifyHs(`Bearer ${await sign({ issuer: 'anyone', audience: 'anything' })}`)).toEqual({ userId: '1', deviceId: 'd' });
  });
});

/** RFC 8292 VAPID: the header a push service verifies with our public key. */
import { vapidPrivateKey } from '../../support/vapid-key.js';
import { createECDH } from 'node:crypto';
import { decodeProtectedHeader, importJWK, jwtVerify } from 'jose';
import { describe, expect, it } from 'vitest';
import { createVapidSigner } from '../../../src/transports/vapid.js';

function vapidKey() {
  const ecdh = createECDH('prime256v1');
  ecdh.generateKeys();
  return {
    privateKey: vapidPrivateKey(ecdh),
    publicKey: ecdh.getPublicKey().toString('base64url'),
    subject: 'mailto:ops@chat.example',
  };
}

function parse(header: string): { t: string; k: string } {
  const match = /^vapid t=([A-Za-z0-9_.-]+), k=([A-Za-z0-9_-]+)$/.exec(header);
  if (match === null) throw new Error(`not a VAPID header: ${header}`);
  return { t: match[1] ?? '', k: match[2] ?? '' };
}

async function verify(token: string, publicKey: string, audience: string) {
  const point = Buffer.from(publicKey, 'base64url');
  const key = await importJWK(
    { kty: 'EC', crv: 'P-256', x: point.subarray(1, 33).toString('base64url'), y: point.subarray(33, 65).toString('base64url') },
    'ES256',
  );
  return jwtVerify(token, key, { algorithms: ['ES256'], audience, requiredClaims: ['exp', 'sub'] });
}

describe('VAPID', () => {
  it('signs an ES256 JWT for the endpoint origin that verifies with the public key', async () => {
    const key = vapidKey();
    const now = Date.now();
    const header = await createVapidSigner(key, { now: () => now })(new URL('https://ntfy.example:8443/up/secret?x=1'));
    const { t, k } = parse(header);

    expect(k).toBe(key.publicKey);
    expect(decodeProtectedHeader(t)).toEqual({ typ: 'JWT', alg: 'ES256' });
    const { payload } = await verify(t, k, 'https://ntfy.example:8443');
    expect(payload.sub).toBe('mailto:ops@chat.example');
    expect(payload.exp).toBeGreaterThan(now / 1000);
    expect(payload.exp).toBeLessThanOrEqual(now / 1000 + 24 * 3600);
    expect(t).not.toContain(Buffer.from('secret').toString('base64url')); // the path stays out
  });

  it('fails verification with another key', async () => {
    const header = await createVapidSigner(vapidKey())(new URL('https://ntfy.example/up/a'));
    await expect(verify(parse(header).t, vapidKey().publicKey, 'https://ntfy.example')).rejects.toThrow();
  });

  it('never asks for more than 24 hours', async () => {
    const now = Date.now();
    const { t } = parse(await createVapidSigner(vapidKey(), { now: () => now, lifetimeSeconds: 7 * 24 * 3600 })(new URL('https://a.example/')));
    const exp = (JSON.parse(Buffer.from(t.split('.')[1] ?? '', 'base64url').toString()) as { exp: number }).exp;
    expect(exp - Math.floor(now / 1000)).toBe(24 * 3600);
  });

  it('reuses a token per origin until an hour before it expires', async () => {
    let now = Date.parse('2026-12-01T00:00:00Z');
    const sign = createVapidSigner(vapidKey(), { now: () => now });
    const first = await sign(new URL('https://a.example/up/1'));
    expect(await sign(new URL('https://a.example/up/2'))).toBe(first);
    expect(await sign(new URL('https://b.example/up/1'))).not.toBe(first);
    now += 11 * 3600 * 1000 + 1000; // 12-hour tokens are renewed after 11 hours
    expect(await sign(new URL('https://a.example/up/1'))).not.toBe(first);
  });
});

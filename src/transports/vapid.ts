/**
 * VAPID (RFC 8292): identifies this server to a push service, so a distributor that bound a
 * subscription to our public key accepts only our messages. The header is
 * `Authorization: vapid t=<JWT>, k=<public key>`, the JWT being ES256 over
 * `{aud: <origin of the endpoint>, exp: <≤ 24 h ahead>, sub: <contact>}`.
 *
 * A token is reused for its origin until an hour before it expires (a signature per wake
 * would be wasted work); the cache is bounded, since origins are chosen by devices.
 */
import { importJWK, SignJWT, type CryptoKey } from 'jose';

export interface VapidKey {
  /** base64url raw P-256 private scalar (32 bytes). */
  readonly privateKey: string;
  /** base64url uncompressed public point (65 bytes). */
  readonly publicKey: string;
  /** mailto: or https: contact of the operator. */
  readonly subject: string;
}

export interface VapidOptions {
  readonly now?: () => number;
  /** Token lifetime; RFC 8292 §2 caps it at 24 hours. */
  readonly lifetimeSeconds?: number;
  readonly maxCachedOrigins?: number;
}

/** Returns the `Authorization` header value for a request to `endpoint`. */
export type VapidSigner = (endpoint: URL) => Promise<string>;

const hour = 3600;

export function createVapidSigner(key: VapidKey, options: VapidOptions = {}): VapidSigner {
  const now = options.now ?? Date.now;
  const lifetime = Math.min(options.lifetimeSeconds ?? 12 * hour, 24 * hour);
  const maxOrigins = options.maxCachedOrigins ?? 1000;
  const publicKey = Buffer.from(key.publicKey, 'base64url');
  let signingKey: Promise<CryptoKey> | undefined; // imported on first use
  const cache = new Map<string, { header: string; refreshAt: number }>();

  return async (endpoint) => {
    const audience = endpoint.origin;
    const cached = cache.get(audience);
    const nowSeconds = Math.floor(now() / 1000);
    if (cached !== undefined && nowSeconds < cached.refreshAt) return cached.header;
    const jwt = await new SignJWT({ sub: key.subject })
      .setProtectedHeader({ typ: 'JWT', alg: 'ES256' })
      .setAudience(audience)
      .setExpirationTime(nowSeconds + lifetime)
      .sign(await (signingKey ??= importSigningKey(key.privateKey, publicKey)));
    const header = `vapid t=${jwt}, k=${publicKey.toString('base64url')}`;
    cache.delete(audience);
    if (cache.size >= maxOrigins) cache.delete(cache.keys().next().value!);
    cache.set(audience, { header, refreshAt: nowSeconds + lifetime - Math.min(hour, lifetime / 2) });
    return header;
  };
}

/** A JWK from the raw scalar and its public point, as jose signs ES256 from a JWK. */
function importSigningKey(privateKey: string, publicKey: Buffer): Promise<CryptoKey> {
  return importJWK(
    {
      kty: 'EC',
      crv: 'P-256',
      d: Buffer.from(privateKey, 'base64url').toString('base64url'),
      x: publicKey.subarray(1, 33).toString('base64url'),
      y: publicKey.subarray(33, 65).toString('base64url'),
    },
    'ES256',
  ) as Promise<CryptoKey>;
}

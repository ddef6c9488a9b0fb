/**
 * Device JWTs for tests, as the host chat server issues them: `sub` = user id,
 * `device_id`, `exp`. `signDeviceToken` makes a good one; `signClaims` and `unsignedToken`
 * make exactly the claims and header you give, for forged-token tests.
 *
 *   const token = await signDeviceToken({ userId: '42', deviceId: 'phone', secret: testJwtSecret });
 */
import type { KeyObject } from 'node:crypto';
import { SignJWT, type JWTPayload } from 'jose';

/** The HS256 secret test services are configured with (≥ 32 bytes, as config requires). */
export const testJwtSecret = 'integration-test-secret-0123456789abcdef';

export type SigningKey =
  | { readonly secret: string; readonly algorithm?: 'HS256' }
  | { readonly privateKey: KeyObject; readonly algorithm: 'RS256' | 'ES256' | 'EdDSA' }
  | { readonly secretBytes: Uint8Array; readonly algorithm: 'HS256' };

export type DeviceTokenOptions = {
  readonly userId: string;
  readonly deviceId: string;
  /** jose time span ('1h', '-5m') or seconds since the epoch; default one hour from now. */
  readonly expiresIn?: string | number;
  readonly issuer?: string;
  readonly audience?: string;
  /** Extra claims, merged last. */
  readonly claims?: Readonly<Record<string, unknown>>;
} & SigningKey;

export async function signDeviceToken(options: DeviceTokenOptions): Promise<string> {
  const claims: Record<string, unknown> = { sub: options.userId, device_id: options.deviceId };
  if (options.issuer !== undefined) claims['iss'] = options.issuer;
  if (options.audience !== undefined) claims['aud'] = options.audience;
  const jwt = new SignJWT({ ...claims, ...options.claims }).setIssuedAt().setExpirationTime(options.expiresIn ?? '1h');
  return sign(jwt, options);
}

/** Signs exactly `claims` (no `exp` unless given) with `key`. */
export async function signClaims(claims: Readonly<Record<string, unknown>>, key: SigningKey): Promise<string> {
  return sign(new SignJWT(claims as JWTPayload), key);
}

/** An `alg: none` token: what a forger sends hoping the verifier trusts the header. */
export function unsignedToken(claims: Readonly<Record<string, unknown>>): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'none', typ: 'JWT' })}.${part(claims)}.`;
}

async function sign(jwt: SignJWT, key: SigningKey): Promise<string> {
  if ('privateKey' in key) return jwt.setProtectedHeader({ alg: key.algorithm }).sign(key.privateKey);
  const bytes = 'secretBytes' in key ? key.secretBytes : new TextEncoder().encode(key.secret);
  return jwt.setProtectedHeader({ alg: 'HS256' }).sign(bytes);
}

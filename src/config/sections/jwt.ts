/** The key that verifies device JWTs (api only, docs/design.md, Authentication): it pins the algorithm. */
import { createPublicKey, type KeyObject } from 'node:crypto';
import { ConfigError } from '../errors.js';
import { section } from '../section.js';
import { text } from '../vars.js';

export type JwtKey =
  { kind: 'secret'; algorithm: 'HS256'; key: Uint8Array } | { kind: 'public'; algorithm: 'RS256' | 'ES256' | 'EdDSA'; key: KeyObject };

export interface JwtSettings {
  readonly key: JwtKey;
  readonly issuer: string | undefined;
  readonly audience: string | undefined;
}

export const jwtSection = section(
  { JWT_SECRET: text(), JWT_PUBLIC_KEY: text(), JWT_ISSUER: text(), JWT_AUDIENCE: text() },
  (v): { jwt: JwtSettings } => ({ jwt: { key: jwtKey(v.JWT_SECRET, v.JWT_PUBLIC_KEY), issuer: v.JWT_ISSUER, audience: v.JWT_AUDIENCE } }),
);

function jwtKey(secret: string | undefined, publicKey: string | undefined): JwtKey {
  if (secret !== undefined && publicKey !== undefined) {
    throw new ConfigError('JWT_PUBLIC_KEY', 'must not be set together with JWT_SECRET (the key pins the algorithm)');
  }
  if (secret !== undefined) {
    // RFC 7518 §3.2: an HS256 key must be at least as long as the hash output.
    if (Buffer.byteLength(secret, 'utf8') < 32) throw new ConfigError('JWT_SECRET', 'must be at least 32 bytes');
    return { kind: 'secret', algorithm: 'HS256', key: new TextEncoder().encode(secret) };
  }
  if (publicKey === undefined) throw new ConfigError('JWT_SECRET', 'is required (or JWT_PUBLIC_KEY): the api verifies device JWTs');
  let key: KeyObject;
  try {
    key = createPublicKey(publicKey.replace(/\\n/g, '\n'));
  } catch {
    throw new ConfigError('JWT_PUBLIC_KEY', 'is not a PEM public key');
  }
  const type = key.asymmetricKeyType;
  if (type === 'rsa') {
    if ((key.asymmetricKeyDetails?.modulusLength ?? 0) < 2048) throw new ConfigError('JWT_PUBLIC_KEY', 'RSA key must be at least 2048 bits');
    return { kind: 'public', algorithm: 'RS256', key };
  }
  if (type === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1') return { kind: 'public', algorithm: 'ES256', key };
  if (type === 'ed25519') return { kind: 'public', algorithm: 'EdDSA', key };
  throw new ConfigError('JWT_PUBLIC_KEY', 'must be an RSA, P-256 or Ed25519 public key (RS256, ES256 or EdDSA)');
}

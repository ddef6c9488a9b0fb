/** How a push service checks an RFC 8292 VAPID `Authorization` header against the key a subscription was bound to. */
import { decodeProtectedHeader, importJWK, jwtVerify } from 'jose';

/** RFC 8292 §2–3: `vapid t=<ES256 JWT for our origin, exp ≤ 24 h>, k=<the bound public key>`. Undefined when right. */
export async function vapidProblem(authorization: string | undefined, origin: string, expectedKey: string): Promise<string | undefined> {
  const match = /^vapid t=([^,\s]+),\s*k=([A-Za-z0-9_-]+)$/.exec(authorization ?? '');
  if (match === null) return `Authorization ${authorization === undefined ? 'missing' : 'is not "vapid t=…, k=…"'}`;
  const [, token = '', key = ''] = match;
  if (key !== expectedKey) return 'VAPID k is not the key the subscription was bound to';
  try {
    if (decodeProtectedHeader(token).typ !== 'JWT') return 'VAPID JWT header lacks typ JWT';
    const point = Buffer.from(key, 'base64url');
    const publicKey = await importJWK(
      { kty: 'EC', crv: 'P-256', x: point.subarray(1, 33).toString('base64url'), y: point.subarray(33, 65).toString('base64url') },
      'ES256',
    );
    const { payload } = await jwtVerify(token, publicKey, { algorithms: ['ES256'], audience: origin, requiredClaims: ['exp', 'sub'] });
    if ((payload.exp ?? 0) > Date.now() / 1000 + 24 * 3600) return 'VAPID exp more than 24 hours ahead';
    if (!/^(mailto:|https:)/.test(String(payload.sub))) return 'VAPID sub is not a mailto: or https: URL';
  } catch (error) {
    return `VAPID JWT rejected: ${error instanceof Error ? error.message : String(error)}`;
  }
  return undefined;
}

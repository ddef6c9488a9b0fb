import type { ECDH } from 'node:crypto';

/**
 * A P-256 private scalar as PUSH_VAPID_PRIVATE_KEY wants it: 32 bytes. `ECDH.getPrivateKey()`
 * drops leading zero bytes (one key in 256 comes out shorter), so pad it back.
 */
export function vapidPrivateKey(ecdh: ECDH): string {
  const scalar = ecdh.getPrivateKey();
  return Buffer.concat([Buffer.alloc(32 - scalar.length), scalar]).toString('base64url');
}

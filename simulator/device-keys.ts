/**
 * What a phone holds for UnifiedPush (RFC 8291): a P-256 key pair and a 16-byte auth secret.
 * The public half and the secret go to the instance in `PUT /api/push/registration`; the
 * private half never leaves the device, and is what makes the distributor's copy of a wake
 * an opaque blob.
 */
import { createECDH, randomBytes, type ECDH } from 'node:crypto';
import ece from 'http_ece';

export interface DeviceKeys {
  /** Uncompressed P-256 public key (65 bytes): the registration's `p256dh`. */
  readonly p256dh: Buffer;
  /** 16-byte authentication secret: the registration's `auth`. */
  readonly auth: Buffer;
  /** The private half, which only the device holds. */
  readonly privateKey: ECDH;
}

/** A device's RFC 8291 key pair and auth secret, as the Android app generates them. */
export function createDeviceKeys(): DeviceKeys {
  const privateKey = createECDH('prime256v1');
  privateKey.generateKeys();
  return { p256dh: privateKey.getPublicKey(), auth: randomBytes(16), privateKey };
}

/** Decrypts one aes128gcm message (RFC 8188/8291) with the device's keys. Throws when it does not decrypt. */
export function decryptForDevice(body: Buffer, keys: DeviceKeys): string {
  return ece.decrypt(body, { version: 'aes128gcm', privateKey: keys.privateKey, authSecret: keys.auth }).toString('utf8');
}

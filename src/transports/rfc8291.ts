/**
 * RFC 8291 message encryption for Web Push / UnifiedPush: one aes128gcm record (RFC 8188)
 * whose header is salt(16) | rs(uint32 BE) | idlen(1) | keyid, keyid being the sender's
 * 65-byte uncompressed public key. Every message gets a fresh sender key pair and salt
 * (RFC 8291 §3.2); both can be injected, which is how the Appendix A test vector is
 * reproduced byte for byte.
 *
 * The wake is a constant, so the record is always the same size: 86 bytes of header plus
 * 20 bytes of payload, 1 delimiter byte and a 16-byte tag — 123 bytes.
 */
import { createECDH, randomBytes, type ECDH } from 'node:crypto';
import ece from 'http_ece';

export interface ReceiverKeys {
  /** The user agent's P-256 public key, uncompressed (65 bytes, 0x04…). */
  readonly p256dh: Buffer;
  /** The user agent's authentication secret (16 bytes). */
  readonly auth: Buffer;
}

export interface SenderMaterial {
  /** The sender's ephemeral key pair; fresh per message when omitted. */
  readonly senderKey?: ECDH;
  /** 16 random bytes; fresh per message when omitted. */
  readonly salt?: Buffer;
}

/** The record size written in the header; larger than any wake, so there is one record. */
const recordSize = 4096;

export class InvalidReceiverKeysError extends Error {
  constructor(problem: string) {
    super(`the device's RFC 8291 keys are unusable: ${problem}`);
    this.name = 'InvalidReceiverKeysError';
  }
}

/** Encrypts `plaintext` to the receiver. Throws `InvalidReceiverKeysError` for keys no device could hold. */
export function encryptForReceiver(plaintext: Buffer, receiver: ReceiverKeys, material: SenderMaterial = {}): Buffer {
  if (receiver.p256dh.length !== 65 || receiver.p256dh[0] !== 0x04) throw new InvalidReceiverKeysError('p256dh is not an uncompressed P-256 point');
  if (receiver.auth.length !== 16) throw new InvalidReceiverKeysError('auth is not 16 bytes');
  const senderKey = material.senderKey ?? newSenderKey();
  try {
    return ece.encrypt(plaintext, {
      version: 'aes128gcm',
      rs: recordSize,
      salt: material.salt ?? randomBytes(16),
      privateKey: senderKey,
      dh: receiver.p256dh,
      authSecret: receiver.auth,
    });
  } catch (error) {
    // computeSecret rejects a point that is not on the curve.
    throw new InvalidReceiverKeysError(
      error instanceof Error && /point|public key/i.test(error.message) ? 'p256dh is not on the curve' : 'encryption failed',
    );
  }
}

function newSenderKey(): ECDH {
  const key = createECDH('prime256v1');
  key.generateKeys();
  return key;
}

/**
 * Types for `http_ece` 1.2 (Encrypted Content-Encoding, RFC 8188 / RFC 8291), which ships none.
 * Only the parameters this project uses are declared.
 */
declare module 'http_ece' {
  import type { ECDH } from 'node:crypto';

  export interface EceParams {
    /** 'aes128gcm' (RFC 8188) — the only version used here. */
    version?: 'aes128gcm';
    /** Record size (default 4096). */
    rs?: number;
    /** 16 bytes; random when omitted. */
    salt?: Buffer | string;
    /** Sender key id; for Web Push, the sender's public key (the default with `privateKey`). */
    keyid?: Buffer;
    /** The local ECDH key pair: the sender's when encrypting, the receiver's when decrypting. */
    privateKey?: ECDH;
    /** The remote public key: the receiver's, when encrypting. */
    dh?: Buffer | string;
    /** The receiver's 16-byte authentication secret. */
    authSecret?: Buffer | string;
    /** Padding bytes to add. */
    pad?: number;
  }

  /** A CommonJS module: in ESM its exports object is the default import. */
  const ece: {
    encrypt(buffer: Buffer, params: EceParams): Buffer;
    decrypt(buffer: Buffer, params: EceParams): Buffer;
  };
  export default ece;
}

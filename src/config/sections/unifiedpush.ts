/**
 * UnifiedPush (docs/design.md, Configuration): which endpoints the api accepts and the worker posts to, and the
 * optional RFC 8292 VAPID key (the worker signs with it; the api publishes its public half).
 */
import { createECDH } from 'node:crypto';
import { ConfigError } from '../errors.js';
import { section } from '../section.js';
import { boolean, text, tryUrl } from '../vars.js';

export interface VapidKey {
  /** base64url raw P-256 scalar. Secret: never log. */
  readonly privateKey: string;
  /** base64url uncompressed point, derived from the private key. */
  readonly publicKey: string;
  readonly subject: string;
}

export interface UnifiedPushSettings {
  readonly allowPrivate: boolean;
  readonly allowHttp: boolean;
  readonly vapid: VapidKey | undefined;
}

export const unifiedPushSection = section(
  {
    PUSH_UP_ALLOW_PRIVATE: boolean(false),
    PUSH_UP_ALLOW_HTTP: boolean(false),
    PUSH_VAPID_PRIVATE_KEY: text(),
    PUSH_VAPID_SUBJECT: text(),
  },
  (v): { unifiedPush: UnifiedPushSettings } => ({
    unifiedPush: {
      allowPrivate: v.PUSH_UP_ALLOW_PRIVATE,
      allowHttp: v.PUSH_UP_ALLOW_HTTP,
      vapid: vapidKey(v.PUSH_VAPID_PRIVATE_KEY, v.PUSH_VAPID_SUBJECT),
    },
  }),
);

function vapidKey(privateKey: string | undefined, subject: string | undefined): VapidKey | undefined {
  if (privateKey === undefined && subject === undefined) return undefined;
  if (privateKey === undefined) throw new ConfigError('PUSH_VAPID_PRIVATE_KEY', 'is required with PUSH_VAPID_SUBJECT');
  if (subject === undefined) throw new ConfigError('PUSH_VAPID_SUBJECT', 'is required with PUSH_VAPID_PRIVATE_KEY');
  const subjectUrl = tryUrl(subject);
  if (subjectUrl === undefined || !['mailto:', 'https:'].includes(subjectUrl.protocol)) {
    throw new ConfigError('PUSH_VAPID_SUBJECT', 'must be a mailto: or https: URL (RFC 8292 §2.1)');
  }
  const publicKey = vapidPublicKey(privateKey);
  if (publicKey === undefined) throw new ConfigError('PUSH_VAPID_PRIVATE_KEY', 'must be a base64url P-256 private key (32 bytes)');
  return { privateKey, publicKey, subject };
}

/** Derives the uncompressed public point (base64url) of a raw P-256 private scalar. */
function vapidPublicKey(privateKey: string): string | undefined {
  if (!/^[A-Za-z0-9_-]+={0,2}$/.test(privateKey)) return undefined;
  const d = Buffer.from(privateKey, 'base64url');
  if (d.length !== 32) return undefined;
  try {
    // ECDH derives the public point and rejects a scalar outside [1, n-1].
    const ecdh = createECDH('prime256v1');
    ecdh.setPrivateKey(d);
    return ecdh.getPublicKey().toString('base64url');
  } catch {
    return undefined;
  }
}

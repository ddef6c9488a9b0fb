/**
 * How an origin is named where operators read it (log lines, the outage gauge): a
 * self-hosted distributor's host is its owner's (a family's own ntfy), so only well-known
 * public origins are named; any other is shown as a stable tag, an HMAC-SHA256 of the origin
 * under a per-deployment key, which cannot be turned back into the host without that key, and
 * is the same on every replica and across restarts (the same origin, the same tag).
 *
 * Named: FCM and its OAuth token endpoint (the `fcm`, `fcm-oauth` providers: our own
 * configuration), and the public UnifiedPush services in `wellKnownOrigins`.
 */
import { createHash, createHmac } from 'node:crypto';
import { parseOriginKey, type OriginKey } from './outage-detector.js';

/** Public UnifiedPush / Web Push services, named in logs (https, default port). */
export const wellKnownOrigins: ReadonlySet<string> = new Set([
  'https://ntfy.sh', // ntfy's public server, the usual UnifiedPush distributor
  'https://up.conversations.im', // Conversations' public UnifiedPush server
  'https://updates.push.services.mozilla.com', // Mozilla autopush (Sunup distributor, Web Push)
]);

export interface OriginLabel {
  readonly provider: string;
  /** The origin when well known, else `self-hosted:<tag>`. */
  readonly origin: string;
}

export type OriginLabeler = (key: OriginKey) => OriginLabel;

/**
 * `secret` is material only this deployment holds (the worker derives it from its own secrets,
 * see `originTagSecret`); the key is a hash of it, so no secret itself is used as-is.
 */
export function createOriginLabeler(secret: string): OriginLabeler {
  const key = createHash('sha256').update('zippchat-push origin tag\0').update(secret).digest();
  return (originKeyValue) => {
    const { provider, origin } = parseOriginKey(originKeyValue);
    if (provider !== 'unifiedpush' || wellKnownOrigins.has(origin)) return { provider, origin };
    return { provider, origin: `self-hosted:${createHmac('sha256', key).update(origin).digest('hex').slice(0, 16)}` };
  };
}

/**
 * The per-deployment secret of the tags: what every replica of one deployment shares and no
 * log reader has — the database URL (its credentials) and, when set, the VAPID private key.
 * Changing them changes the tags (documented in docs/operations.md).
 */
export function originTagSecret(parts: { readonly databaseUrl: string; readonly vapidPrivateKey?: string | undefined }): string {
  return [parts.databaseUrl, parts.vapidPrivateKey ?? ''].join('\0');
}

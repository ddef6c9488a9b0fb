/**
 * UnifiedPush (RFC 8030 push service, RFC 8291 message encryption, optional RFC 8292 VAPID).
 *
 * The endpoint is chosen by whoever registered the device, so it is treated as hostile: the
 * request goes through the guarded agent (safe-http.ts), carries a constant body, follows no
 * redirect, and nothing of the answer but its status and `Retry-After` is used.
 *
 * On the wire: `POST <endpoint>` with `TTL: 3600`, `Topic: wake` (a newer wake replaces an
 * undelivered one), `Urgency: high|normal`, and either the RFC 8291 aes128gcm record of the
 * wake (`Content-Encoding: aes128gcm`) or, for a device that gave no keys, the wake in the clear.
 */
import type { Dispatcher } from 'undici';
import { parseRetryAfter } from './retry-after.js';
import { encryptForReceiver, InvalidReceiverKeysError } from './rfc8291.js';
import { describeFailure, postWithDeadline } from './safe-http.js';
import { type RegistrationForSend, type ProviderAnswer, type PushSender, wakePayload } from './types.js';
import type { VapidSigner } from './vapid.js';
import type { WakePriority } from '../../domain/vocabulary.js';
import { parseEndpointUrl } from './endpoint-url.js';

export interface UnifiedPushOptions {
  /** The guarded agent (or a plain one when PUSH_UP_ALLOW_PRIVATE). */
  readonly dispatcher: Dispatcher;
  /** PUSH_UP_ALLOW_HTTP: accept http:// endpoints (development). */
  readonly allowHttp: boolean;
  readonly deadlineMs: number;
  readonly bodyCapBytes: number;
  readonly vapid?: VapidSigner;
  readonly now?: () => number;
}

const wake = Buffer.from(wakePayload, 'utf8');

export function createUnifiedPushSender(options: UnifiedPushOptions): PushSender {
  const now = options.now ?? Date.now;
  return {
    name: 'unifiedpush',
    async send(registration, priority, signal) {
      const endpoint = parseEndpointUrl(registration.token, options);
      if (typeof endpoint === 'string') return { kind: 'dead', reason: endpoint };
      let message: { body: Buffer; headers: Record<string, string> };
      try {
        message = wakeMessage(registration, priority);
      } catch (error) {
        if (error instanceof InvalidReceiverKeysError) return { kind: 'dead', reason: error.message };
        throw error;
      }
      if (options.vapid !== undefined) message.headers.authorization = await options.vapid(endpoint);
      try {
        const answer = await postWithDeadline(endpoint.href, {
          ...message,
          dispatcher: options.dispatcher,
          deadlineMs: options.deadlineMs,
          bodyCapBytes: options.bodyCapBytes,
          signal,
        });
        return outcomeForStatus(answer.status, parseRetryAfter(answer.headers['retry-after'], now()));
      } catch (error) {
        const failure = describeFailure(error);
        // An IP literal the policy refuses can never become acceptable; a name may resolve
        // elsewhere tomorrow, and ten failures in a row prune it anyway — its
        // DNS is the endpoint's own doing, so it is the endpoint's failure.
        if (failure.forbidden !== undefined) {
          return failure.forbidden.literal
            ? { kind: 'dead', reason: failure.reason }
            : { kind: 'deferred', cause: 'failing', reason: failure.reason, blame: 'endpoint' };
        }
        return { kind: 'deferred', cause: 'failing', reason: failure.reason, blame: 'network' };
      }
    },
  };
}

function wakeMessage(registration: RegistrationForSend, priority: WakePriority): { body: Buffer; headers: Record<string, string> } {
  const headers: Record<string, string> = { ttl: '3600', topic: 'wake', urgency: priority };
  const { p256dh, auth } = registration;
  if (p256dh === null && auth === null) return { body: wake, headers };
  if (p256dh === null || auth === null) throw new InvalidReceiverKeysError('p256dh and auth come together');
  const body = encryptForReceiver(wake, { p256dh, auth });
  return { body, headers: { ...headers, 'content-encoding': 'aes128gcm', 'content-type': 'application/octet-stream' } };
}

/**
 * What a push service's answer means (RFC 8030 §5–§8; ntfy, NextPush, Sunup behave alike).
 * 429 is the service rate-limiting this endpoint (the UnifiedPush server spec: honour it per
 * endpoint): a back-off, never a failure. Anything else that is neither success nor "gone" is
 * the endpoint's failure: ten in a row prune the registration unless the
 * outage detector finds the whole origin failing.
 */
export function outcomeForStatus(status: number, retryAfterMs: number | undefined): ProviderAnswer {
  if (status >= 200 && status < 300) return { kind: 'delivered', status }; // ntfy 200, RFC 8030 201
  if (status === 404 || status === 410) return { kind: 'dead', reason: `UnifiedPush ${status}: endpoint gone` };
  const after = retryAfterMs === undefined ? {} : { retryAfterMs };
  if (status === 429) return { kind: 'deferred', cause: 'rate_limited', reason: 'UnifiedPush 429: rate limited', ...after };
  const reason = status >= 300 && status < 400 ? `UnifiedPush ${status}: redirect not followed` : `UnifiedPush ${status}`; // 5xx (ntfy's 507: no subscriber yet), other 4xx
  return { kind: 'deferred', cause: 'failing', reason, blame: 'endpoint', ...after };
}

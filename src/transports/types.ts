/**
 * The one small interface every push transport implements (guides: one module per provider,
 * dead tokens returned as data, temporary failures carrying a retry delay). The send activity
 * maps the outcome to the registration's fate; retries belong to Temporal's retry policy.
 */
import type { TransportName, WakePriority } from '../domain.js';

/** A registration as the transports need it. Secrets: never log, never return to a workflow. */
export interface RegistrationForSend {
  readonly id: string;
  /** The registration's user: the prune breaker counts users (breaker.ts). */
  readonly userId: string;
  readonly transport: TransportName;
  /** FCM registration token, or the UnifiedPush endpoint URL. */
  readonly token: string;
  /** RFC 8291 receiver key (65-byte uncompressed P-256 point) and auth secret (16 bytes), or both null. */
  readonly p256dh: Buffer | null;
  readonly auth: Buffer | null;
}

/**
 * Whose failure a transient outcome may be (docs/transports.md, "Whose failure is it"):
 * - `endpoint`: the endpoint's server answered, about this endpoint or token (a UnifiedPush
 *   5xx, FCM's 503 for this token);
 * - `network`: no answer at all (timeout, refused, reset, DNS, TLS) — the endpoint, or our
 *   own network, or the provider as a whole;
 * - `token-endpoint`: the OAuth token could not be had: the request never left (never the device's);
 * - `internal`: a bug of ours (never the device's).
 * Whether it counts toward the ten is decided by the outage detector (outage-detector.ts).
 */
export type FailureBlame = 'endpoint' | 'network' | 'token-endpoint' | 'internal';

export type SendOutcome =
  /** The provider accepted the wake (any 2xx). */
  | { readonly kind: 'delivered' }
  /** The token or endpoint will never work again: delete the registration. */
  | { readonly kind: 'dead'; readonly reason: string }
  /** Try again later; `retryAfterMs` when the provider said how long to wait. */
  | { readonly kind: 'transient'; readonly reason: string; readonly blame: FailureBlame; readonly retryAfterMs?: number }
  /** The provider rate-limits this endpoint (UnifiedPush 429, FCM QUOTA_EXCEEDED): a back-off, never a failure. */
  | { readonly kind: 'rate-limited'; readonly reason: string; readonly retryAfterMs?: number }
  /** Our side is misconfigured (no FCM credentials, rejected credentials, breaker open):
   *  neither the device's fault nor fixed by retrying soon. */
  | { readonly kind: 'config-error'; readonly reason: string };

/** Sends wakes through one transport (FCM or UnifiedPush). */
export interface PushSender {
  readonly name: TransportName;
  /** `signal` aborts the request(s) in flight (the send activity was cancelled); the outcome then means nothing. */
  send(registration: RegistrationForSend, priority: WakePriority, signal?: AbortSignal): Promise<SendOutcome>;
}

/** The constant wake: it names nobody and nothing, and its size never varies. */
export const wakePayload = '{"v":"1","t":"wake"}';

/**
 * What the send activity gets for one wake: the transport's outcome judged by the outage
 * detector (transports/index.ts). `retry` is every wake that did not go through and may later:
 * `cause` says whether it was sent and failed, was rate-limited, or was held back unsent
 * because its origin is in outage; `counts` whether the failure counts toward the ten of
 * docs/design.md, Pruning; `outage` names the origin (`<provider> <origin>`) when it is in outage, so that
 * the outage's end wakes the device. Reasons are fixed texts (no token, no URL).
 */
export type WakeOutcome =
  | { readonly kind: 'delivered' }
  | { readonly kind: 'dead'; readonly reason: string }
  | { readonly kind: 'config-error'; readonly reason: string }
  | {
      readonly kind: 'retry';
      readonly reason: string;
      readonly cause: 'failed' | 'rate-limited' | 'outage';
      readonly retryAfterMs?: number;
      readonly counts: boolean;
      readonly outage?: string;
    };

export interface WakeSender {
  /**
   * Sends one wake, `now` being the workflow's time (the detector's clock). Never throws.
   * `signal`: the send activity's cancellation; it aborts the requests in flight.
   */
  send(registration: RegistrationForSend, priority: WakePriority, now: number, signal?: AbortSignal): Promise<WakeOutcome>;
}

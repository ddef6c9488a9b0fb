/**
 * The one small interface every push transport implements (guides: one module per provider,
 * dead tokens returned as data, temporary failures carrying a retry delay). The send activity
 * maps the outcome to the registration's fate; retries belong to Temporal's retry policy.
 */
import type { DeferralHold, TransportName, WakePriority } from '../../domain/vocabulary.js';

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
 * Whose failure a `failing` answer may be (docs/transports.md, "Whose failure is it"):
 * - `endpoint`: the endpoint's server answered, about this endpoint or token (a UnifiedPush
 *   5xx, FCM's 503 for this token);
 * - `network`: no answer at all (timeout, refused, reset, DNS, TLS) — the endpoint, or our
 *   own network, or the provider as a whole;
 * - `token-endpoint`: the OAuth token could not be had: the request never left (never the device's);
 * - `internal`: a bug of ours (never the device's).
 * Whether it counts toward the ten is decided by the outage detector (outage-detector.ts).
 */
export type FailureBlame = 'endpoint' | 'network' | 'token-endpoint' | 'internal';

/** Sends wakes through one provider (FCM or UnifiedPush); inside src/transports only. */
export interface PushSender {
  readonly name: TransportName;
  /** `signal` aborts the request(s) in flight (the send activity was cancelled); the answer then means nothing. */
  send(registration: RegistrationForSend, priority: WakePriority, signal?: AbortSignal): Promise<ProviderAnswer>;
}

/** The constant wake: it names nobody and nothing, and its size never varies. */
export const wakePayload = '{"v":"1","t":"wake"}';

/**
 * The fate of one wake, in the words used from the transports to the workflow and on the
 * metrics (`push_wakes_total{outcome,cause}`): `delivered`, `dead` (the registration is
 * deleted), `misconfigured` (our side cannot send it), or `deferred` (not delivered yet; the
 * claim is released with a back-off until `until`). The send activity adds only `gone` (the
 * registration was deleted meanwhile): activities/registration.ts `SendResult`.
 *
 * Here, as the transports judge it (the outage detector in index.ts): `until` is the provider's
 * Retry-After on the workflow's clock, when it gave one; `counts` says whether the failure
 * counts toward the ten of docs/design.md, Pruning; `origin` names the origin
 * (`<provider> <origin>`) in outage, whose end wakes the device. Reasons are fixed texts
 * (no token, no URL).
 */
export type DeliveryOutcome =
  | Settled
  | {
      readonly kind: 'deferred';
      readonly cause: DeferralHold;
      readonly reason: string;
      readonly until?: number;
      readonly counts: boolean;
      readonly origin?: string;
    };

/** The outcomes that need no judging: the provider took the wake, or it never will. */
type Settled =
  /** The provider accepted the wake (any 2xx): `status` is its HTTP status (absent from senders that do not say). */
  | { readonly kind: 'delivered'; readonly status?: number }
  /** The token or endpoint will never work again: delete the registration. */
  | { readonly kind: 'dead'; readonly reason: string }
  /** Our side is wrong (no FCM credentials, credentials refused, breaker open): neither the
   *  device's fault nor fixed by retrying soon. `noToken`: nothing was sent for want of an
   *  access token, so the hold ends when this worker's credentials work (`credentialHoldRecorded`). */
  | { readonly kind: 'misconfigured'; readonly reason: string; readonly noToken?: true }
  /** The send's own cancellation (its activity's) cut it short: whatever the provider did is
   *  not known, and nothing is recorded of it — not against the device, not against the origin. */
  | { readonly kind: 'cancelled' };

/**
 * What a provider's answer means, as a raw sender classifies it: a `DeliveryOutcome` before
 * the outage detector judged it. A failing send says whose failure it may be (`blame`); a wait
 * the provider asked for is relative (`retryAfterMs`): a raw sender has no workflow clock.
 * Inside src/transports only.
 */
export type ProviderAnswer =
  | Settled
  | { readonly kind: 'deferred'; readonly cause: 'failing'; readonly reason: string; readonly blame: FailureBlame; readonly retryAfterMs?: number }
  /** The provider rate-limits this endpoint (UnifiedPush 429, FCM QUOTA_EXCEEDED): a back-off, never a failure. */
  | { readonly kind: 'deferred'; readonly cause: 'rate_limited'; readonly reason: string; readonly retryAfterMs?: number };

export interface WakeSender {
  /**
   * Sends one wake, `now` being the workflow's time (the detector's clock). Never throws.
   * `signal`: the send activity's cancellation; it aborts the requests in flight.
   */
  send(registration: RegistrationForSend, priority: WakePriority, now: number, signal?: AbortSignal): Promise<DeliveryOutcome>;
  /**
   * A wake held back for want of an access token (`noToken`) is recorded, its hold committed.
   * Credentials that started working while it was being recorded announced their recovery
   * before the hold existed, and the recovery missed it: this announces it again.
   */
  credentialHoldRecorded?(transport: TransportName): void;
}

/**
 * The provider's own answer to a send, as an operator reads it (`push-admin wake`, the
 * registration's `last_send_answer`): a delivery as `<transport> <HTTP status>`, anything else
 * as its reason, which names the status, FCM's error code or why nothing was sent. Fixed texts:
 * never a token, an endpoint or a key.
 */
export function providerAnswer(transport: TransportName, outcome: DeliveryOutcome): string {
  if (outcome.kind === 'cancelled') return 'cancelled: no answer read';
  if (outcome.kind !== 'delivered') return outcome.reason;
  const name = transport === 'fcm' ? 'FCM' : 'UnifiedPush';
  return outcome.status === undefined ? `${name}: accepted` : `${name} ${outcome.status}`;
}

/**
 * The one small interface every push transport implements (guides: one module per provider,
 * dead tokens returned as data, temporary failures carrying a retry delay). The send activity
 * maps the outcome to the registration's fate; retries belong to Temporal's retry policy.
 */
export type TransportName = 'fcm' | 'unifiedpush';

export type Priority = 'high' | 'normal';

/** A registration as the transports need it. Secrets: never log, never return to a workflow. */
export interface RegistrationForSend {
  readonly id: string;
  readonly transport: TransportName;
  /** FCM registration token, or the UnifiedPush endpoint URL. */
  readonly token: string;
  /** RFC 8291 receiver key (65-byte uncompressed P-256 point) and auth secret (16 bytes), or both null. */
  readonly p256dh: Buffer | null;
  readonly auth: Buffer | null;
}

export type SendOutcome =
  /** The provider accepted the wake (any 2xx). */
  | { readonly kind: 'delivered' }
  /** The token or endpoint will never work again: delete the registration. */
  | { readonly kind: 'dead'; readonly reason: string }
  /** Try again later; `retryAfterMs` when the provider said how long to wait. */
  | { readonly kind: 'transient'; readonly reason: string; readonly retryAfterMs?: number }
  /** Our side is misconfigured (no FCM credentials, rejected credentials, breaker open):
   *  neither the device's fault nor fixed by retrying soon. */
  | { readonly kind: 'config-error'; readonly reason: string };

export interface Transport {
  readonly name: TransportName;
  send(registration: RegistrationForSend, priority: Priority): Promise<SendOutcome>;
}

/** The constant wake (design §1). Its size never varies. */
export const wakePayload = '{"v":"1","t":"wake"}';

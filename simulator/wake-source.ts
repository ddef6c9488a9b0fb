/**
 * Where a simulated phone's wakes come from: a UnifiedPush distributor endpoint (decrypted
 * with the phone's own RFC 8291 keys) or FCM (the local FCM stand-in's inbox for the phone's
 * token). Either way the phone sees the same thing: a wake, its priority, and nothing else.
 */
import type { RegistrationBody } from './api-client.js';
import type { TransportName, WakePriority } from '../domain/vocabulary.js';

export interface ReceivedWake {
  readonly transport: TransportName;
  readonly at: Date;
  /** As it arrived (FCM: `RemoteMessage.getPriority()`; UnifiedPush: its Urgency). */
  readonly priority: WakePriority;
  /** FCM only: as it was sent (`getOriginalPriority()`); `high` with `priority` normal is a HIGH wake FCM lowered. */
  readonly originalPriority?: WakePriority;
  /** UnifiedPush with keys: the body was an RFC 8291 record, decrypted on the phone. */
  readonly encrypted: boolean;
  /** Bytes on the wire (UnifiedPush body, or FCM send request). */
  readonly bytes: number;
  /** The payload as the app reads it (decrypted), when it could be read. */
  readonly payload: string | undefined;
  /** What was wrong with it (wrong headers, does not decrypt, not the wake…); empty when right. */
  readonly problems: readonly string[];
}

export interface WakeSource {
  readonly transport: TransportName;
  /** What the phone sends in `PUT /api/push/registration`. */
  readonly registration: RegistrationBody;
  /** A one-line description for people (never the token or endpoint path). */
  readonly description: string;
  next(timeoutMs: number, signal?: AbortSignal): Promise<ReceivedWake>;
  close(): Promise<void>;
}

/**
 * The service's vocabulary, one name per idea, shared by the processes, the workflows (as
 * types only), the tools and the tests:
 *
 *   - a transport is one of the two ways a wake reaches a phone, named by `TransportName`
 *     (`PushSender` in src/transports is the object that sends through one);
 *   - a device is identified by the pair `DeviceIdentity` (the host's user, the device id the
 *     app chose): one registration, one workflow;
 *   - a wake goes out at a `WakePriority`: `high` only when a DM is pending (docs/design.md, Wakes).
 */
import { z } from 'zod';

export const transportNames = ['fcm', 'unifiedpush'] as const;
export type TransportName = (typeof transportNames)[number];
/** A transport name as PostgreSQL rows and JSON carry it. */
export const transportNameSchema = z.enum(transportNames);

export interface DeviceIdentity {
  readonly userId: string;
  readonly deviceId: string;
}

/** A device and the transport its workflow is started with, should it be missing: what a signal-with-start needs. */
export interface DeviceToSignal extends DeviceIdentity {
  readonly transport: TransportName;
}

export type WakePriority = 'high' | 'normal';

/**
 * Wakes a provider accepted in a row without a drain after which a device counts as repeatedly
 * undrained (`push_registrations_repeatedly_undrained`): its wakes reach the provider but not
 * the app, or the app cannot drain.
 */
export const repeatedlyUndrainedAfter = 3;

/**
 * Why a back-off holds a device's wakes, in the words the device itself is told (`delivery` of
 * `GET /api/push/registration`) and `push_registrations.backoff_cause` stores: its distributor
 * or FCM asked us to wait, the provider's origin is in outage, its endpoint keeps failing, or
 * our own configuration cannot send to its transport.
 */
export const backoffCauses = ['rate_limited', 'outage', 'failing', 'misconfigured'] as const;
export type BackoffCause = (typeof backoffCauses)[number];
/** What holds a device's wakes back now: a back-off of one of those causes, or the FCM wake budget. */
export type HoldReason = BackoffCause | 'budget';

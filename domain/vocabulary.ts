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
 * Why a device's wakes are held back — one vocabulary from the transports to the device, which
 * is told it in these words (`delivery.reason` of `GET /api/push/registration`):
 *
 *   - `rate_limited`: its distributor or FCM asked us to wait;
 *   - `outage`: its provider's origin is in outage, and the wake waits unsent for its end;
 *   - `failing`: its endpoint keeps failing;
 *   - `misconfigured`: our own configuration cannot send to its transport;
 *   - `budget`: the FCM wake budget is spent.
 *
 * A back-off (`push_registrations.backoff_cause`) holds for any but the budget; a send that did
 * not go through is deferred for the first three (our misconfiguration is an outcome of its own).
 */
export const holds = ['rate_limited', 'outage', 'failing', 'misconfigured', 'budget'] as const;
export type Hold = (typeof holds)[number];
/** The holds a back-off records (`push_registrations.backoff_cause`). */
export const backoffHolds = ['rate_limited', 'outage', 'failing', 'misconfigured'] as const satisfies readonly Hold[];
export type BackoffHold = (typeof backoffHolds)[number];
/** The holds a send that did not go through is deferred for (a `deferred` outcome's `cause`). */
export type DeferralHold = Exclude<BackoffHold, 'misconfigured'>;

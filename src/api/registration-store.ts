/**
 * The `push_registrations` row of one device (docs/design.md, Registrations): one per (user, device), kept by an
 * upsert so its id — and with it the device's pending rows — survives a transport switch.
 */
import { ForeignKeyIntegrityConstraintViolationError, sql } from 'slonik';
import { z } from 'zod';
import type { DatabasePool } from '../db/pool.js';
import type { DeviceIdentity } from '../../domain/vocabulary.js';
import { lockDevice } from './device-lock.js';
import type { RegistrationRequest } from './registration-request.js';
import { backoffHolds, transportNameSchema } from '../../domain/vocabulary.js';
import type { WakePolicy } from '../../domain/wake-policy.js';
import { deliveryJson } from './delivery-state.js';
import { oweSignals, userTurn } from '../db/signal-outbox.js';

const registrationView = z.object({
  transport: transportNameSchema,
  created_at: z.date(),
  updated_at: z.date(),
  encrypted: z.boolean(),
  // The delivery state (./delivery-state.ts).
  wake_outstanding: z.boolean(),
  last_wake_priority: z.enum(['normal', 'high']).nullable(),
  last_woken_at: z.date().nullable(),
  backoff_until: z.date().nullable(),
  backoff_cause: z.enum(backoffHolds).nullable(),
  fcm_budget_tat: z.date().nullable(),
  failures: z.number(),
  last_delivered_at: z.date().nullable(),
  last_drained_at: z.date().nullable(),
  wakes_since_drain: z.number(),
  priority_lowered: z.boolean(),
  test_wake_pending: z.boolean(),
  has_pending: z.boolean(),
  dm_pending: z.boolean(),
});

/** The columns of a `RegistrationView`, of the row `push_registrations` names. */
const viewColumns = sql.fragment`
  push_registrations.transport, push_registrations.created_at, push_registrations.updated_at,
  push_registrations.up_p256dh IS NOT NULL AS encrypted,
  push_registrations.wake_outstanding, push_registrations.last_wake_priority, push_registrations.last_woken_at,
  push_registrations.backoff_until, push_registrations.backoff_cause, push_registrations.fcm_budget_tat, push_registrations.failures,
  push_registrations.last_delivered_at, push_registrations.last_drained_at, push_registrations.wakes_since_drain,
  push_registrations.priority_lowered, push_registrations.test_wake_pending,
  EXISTS (SELECT 1 FROM push_pending p WHERE p.registration_id = push_registrations.id) AS has_pending,
  EXISTS (SELECT 1 FROM push_pending p WHERE p.registration_id = push_registrations.id AND p.is_dm) AS dm_pending`;

/** What the api tells a device about its registration — never the token or keys. */
export type RegistrationView = z.infer<typeof registrationView>;

export type RegistrationOutcome = 'created' | 'refreshed' | 'switched';

const upsertResult = registrationView.extend({ id: z.string(), previous_transport: transportNameSchema.nullable() });

/**
 * Creates or replaces the device's registration. Same transport: token and keys replaced,
 * `created_at` kept. Other transport: `created_at` restarts too. A new transport, token or pair
 * of keys clears `wake_outstanding` (that wake went to a token that no longer exists, or was
 * encrypted to keys the phone no longer has: it cannot read it), so the device is woken again
 * within the interval rather than at the re-wake. A new transport or token also clears any back-off
 * (it was the old endpoint's) and the failure count; the same token keeps them — re-registering
 * proves nothing about the endpoint, and an app restarting more often than its back-offs add up
 * must still reach the ten failures that prune it. `updated_at` is bumped always. The FCM wake
 * budget is kept: FCM throttles per app and device, whatever its token (docs/transports.md).
 *
 * The device's workflow is owed a `registered` signal-with-start in the same transaction
 * (src/db/signal-outbox.ts): the bridge's signaller starts it, paced behind nothing a DM needs,
 * and nothing is lost if the api dies before it went out.
 *
 * Only a device with a live session (docs/design.md, Host tables: an unrevoked, unexpired `refresh_tokens`
 * row of this user and device) is registered: checked in the same statement, so nothing is
 * stored otherwise, and after the device's lock, so a revocation in progress either finishes
 * first or deletes what this stores (device-lock.ts). Undefined when the user does not exist
 * or the device has no live session.
 */
export async function upsertRegistration(
  pool: DatabasePool,
  device: DeviceIdentity,
  request: RegistrationRequest,
): Promise<{ view: RegistrationView; outcome: RegistrationOutcome } | undefined> {
  const keys = request.transport === 'unifiedpush' ? request.keys : null;
  const row = await pool
    .transaction(async (tx) => {
      await lockDevice(tx, device);
      const upserted = await tx.maybeOne(sql.type(upsertResult)`
    WITH previous AS (
      SELECT transport FROM push_registrations WHERE user_id = ${device.userId} AND device_id = ${device.deviceId}
    ), upserted AS (
      INSERT INTO push_registrations (user_id, device_id, transport, token, up_p256dh, up_auth)
      SELECT u.id, ${device.deviceId}, ${request.transport}, ${request.token},
        ${keys === null ? null : sql.binary(keys.p256dh)}, ${keys === null ? null : sql.binary(keys.auth)}
      FROM users u WHERE u.id = ${device.userId}
        AND EXISTS (
          SELECT 1 FROM refresh_tokens t
          WHERE t.user_id = u.id AND t.device_id = ${device.deviceId} AND t.revoked_at IS NULL AND t.expires_at > now())
      ON CONFLICT (user_id, device_id) DO UPDATE SET
        transport = EXCLUDED.transport,
        token = EXCLUDED.token,
        up_p256dh = EXCLUDED.up_p256dh,
        up_auth = EXCLUDED.up_auth,
        created_at = CASE WHEN push_registrations.transport = EXCLUDED.transport
          THEN push_registrations.created_at ELSE now() END,
        wake_outstanding = push_registrations.wake_outstanding
          AND push_registrations.transport = EXCLUDED.transport
          AND push_registrations.token = EXCLUDED.token
          AND push_registrations.up_p256dh IS NOT DISTINCT FROM EXCLUDED.up_p256dh
          AND push_registrations.up_auth IS NOT DISTINCT FROM EXCLUDED.up_auth,
        backoff_until = CASE WHEN push_registrations.token = EXCLUDED.token AND push_registrations.transport = EXCLUDED.transport
          THEN push_registrations.backoff_until END,
        backoff_count = CASE WHEN push_registrations.token = EXCLUDED.token AND push_registrations.transport = EXCLUDED.transport
          THEN push_registrations.backoff_count ELSE 0 END,
        backoff_reason = CASE WHEN push_registrations.token = EXCLUDED.token AND push_registrations.transport = EXCLUDED.transport
          THEN push_registrations.backoff_reason END,
        backoff_origin = CASE WHEN push_registrations.token = EXCLUDED.token AND push_registrations.transport = EXCLUDED.transport
          THEN push_registrations.backoff_origin END,
        backoff_cause = CASE WHEN push_registrations.token = EXCLUDED.token AND push_registrations.transport = EXCLUDED.transport
          THEN push_registrations.backoff_cause END,
        failures = CASE WHEN push_registrations.token = EXCLUDED.token AND push_registrations.transport = EXCLUDED.transport
          THEN push_registrations.failures ELSE 0 END,
        updated_at = now()
      RETURNING push_registrations.id, ${viewColumns}
    )
    SELECT upserted.*, previous.transport AS previous_transport FROM upserted LEFT JOIN previous ON TRUE
  `);
      // The workflow's start (or the running one's news) is owed with the registration itself.
      if (upserted !== null) await oweSignals(tx, { signal: 'registered', turnKey: userTurn(device.userId), registrationIds: [upserted.id] });
      return upserted;
    })
    .catch((error: unknown) => {
      // The user was deleted between the SELECT and the INSERT: the same answer as no user.
      if (error instanceof ForeignKeyIntegrityConstraintViolationError) return null;
      throw error;
    });
  if (row === null) return undefined;
  const { previous_transport: previous, id: _id, ...view } = row;
  const outcome = previous === null ? 'created' : previous === view.transport ? 'refreshed' : 'switched';
  return { view, outcome };
}

export async function findRegistration(pool: DatabasePool, device: DeviceIdentity): Promise<RegistrationView | null> {
  return pool.maybeOne(sql.type(registrationView)`
    SELECT ${viewColumns}
    FROM push_registrations WHERE user_id = ${device.userId} AND device_id = ${device.deviceId}
  `);
}

/** A test wake asked for, or why not now. */
export type TestWakeRequest =
  { readonly kind: 'requested'; readonly view: RegistrationView } | { readonly kind: 'too-soon'; readonly retryAfterSeconds: number };

/**
 * Asks for one test wake of the device (the wake policy: one HIGH wake, not coalesced with an
 * outstanding one, under the interval, the back-off and the budget), at most one per `everyMs`
 * whichever api replica or tool asks: the last request's time is the row's own, checked and
 * set under its lock. Null when the device has no registration. The device's workflow must
 * then be signalled `pending`.
 */
export async function requestTestWake(pool: DatabasePool, device: DeviceIdentity, everyMs: number): Promise<TestWakeRequest | null> {
  return pool.transaction(async (tx) => {
    const waitMs = await tx.maybeOne(sql.type(z.object({ wait_ms: z.number().nullable() }))`
      SELECT (extract(epoch FROM test_wake_requested_at + ${everyMs} * interval '1 millisecond' - now()) * 1000)::float8 AS wait_ms
      FROM push_registrations WHERE user_id = ${device.userId} AND device_id = ${device.deviceId}
      FOR NO KEY UPDATE`);
    if (waitMs === null) return null;
    if (waitMs.wait_ms !== null && waitMs.wait_ms > 0) return { kind: 'too-soon', retryAfterSeconds: Math.ceil(waitMs.wait_ms / 1000) };
    const view = await tx.one(sql.type(registrationView)`
      UPDATE push_registrations SET test_wake_pending = true, test_wake_requested_at = now()
      WHERE user_id = ${device.userId} AND device_id = ${device.deviceId}
      RETURNING ${viewColumns}`);
    return { kind: 'requested', view };
  });
}

/** Deletes the registration (its pending rows cascade). Idempotent. */
export async function deleteRegistration(pool: DatabasePool, device: DeviceIdentity): Promise<void> {
  await pool.query(sql.unsafe`DELETE FROM push_registrations WHERE user_id = ${device.userId} AND device_id = ${device.deviceId}`);
}

/** The JSON of `GET`/`PUT /api/push/registration` (docs/design.md, Device API), with the device's delivery state at `now`. */
export function registrationJson(view: RegistrationView, policy: WakePolicy, now: number): Record<string, unknown> {
  return {
    transport: view.transport,
    created_at: view.created_at.toISOString(),
    updated_at: view.updated_at.toISOString(),
    ...(view.transport === 'unifiedpush' ? { encrypted: view.encrypted } : {}),
    ...deliveryJson(policy, view, now),
  };
}

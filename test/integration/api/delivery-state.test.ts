/**
 * The device's own delivery state in `GET`/`PUT /api/push/registration`: each cause that holds
 * its wakes back, as the real claim and send activities record it on PostgreSQL, shows with
 * until when — and clears once a wake is delivered again; `last_woken_at` is the last wake a
 * provider accepted, never a claim held back or refused; wakes since the drain and the drain's
 * time. Only the caller's device is shown.
 */
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRegistrationActivities } from '../../../activities/registration.js';
import { createLogger } from '../../../src/observability/log.js';
import type { DeferralHold } from '../../../domain/vocabulary.js';
import type { DeliveryOutcome } from '../../../src/transports/types.js';
import { startTestApi, type TestApi } from '../../support/api.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { signDeviceToken, testJwtSecret } from '../../support/jwt.js';
import { addPending, createDm, createUser, nextId, registrationId } from './host.js';
import { checked } from './openapi.js';

const budget = { burst: 2, refillMs: 3_600_000, dmReserve: 1 };
const policy = { minIntervalMs: 15_000, rewakeAfterMs: 900_000, fcmBudget: budget };

let db: TestDatabase;
let api: TestApi;
beforeAll(async () => {
  db = await freshDatabase();
  api = await startTestApi({
    db,
    taskQueue: `api-delivery-${nextId()}`,
    lookupHost: async () => ['93.184.215.14'], // ntfy.example, a public address
    env: {
      FCM_PROJECT_ID: 'zippchat-test',
      PUSH_FCM_WAKE_BURST: String(budget.burst),
      PUSH_FCM_WAKE_REFILL_MS: String(budget.refillMs),
      PUSH_FCM_DM_RESERVE: String(budget.dmReserve),
    },
  });
});
afterAll(async () => {
  await api?.close();
  await db?.drop();
});

interface Phone {
  readonly userId: string;
  readonly deviceId: string;
  readonly token: string;
  readonly registrationId: string;
}

/** A device with a live session, registered through `PUT`, with a server-channel row pending. */
async function phone(transport: 'fcm' | 'unifiedpush'): Promise<Phone> {
  const userId = await createUser(db.pool);
  const deviceId = `phone-${nextId()}`;
  await db.pool.query(sql.unsafe`
    INSERT INTO refresh_tokens (user_id, device_id, expires_at) VALUES (${userId}, ${deviceId}, now() + interval '1 day')`);
  const token = await signDeviceToken({ userId, deviceId, secret: testJwtSecret });
  const body =
    transport === 'fcm'
      ? { transport, token: `fcm-${nextId()}:APA91b${'x'.repeat(120)}` }
      : { transport, token: `https://ntfy.example/up${nextId()}?up=1` };
  const put = await checked(api)('PUT', '/api/push/registration', { token, body });
  expect(put.status, put.text).toBe(200);
  const id = await registrationId(db.pool, userId, deviceId);
  await addPending(db.pool, id, [{ channelId: nextId(), isDm: false, firstAt: new Date() }]);
  return { userId, deviceId, token, registrationId: id };
}

/** One claim and send of the device's wake, the provider answering `outcome`. */
async function wake(device: Phone, outcome: DeliveryOutcome): Promise<void> {
  const { claimWake, sendWake } = createRegistrationActivities({
    pool: db.pool,
    log: createLogger({ level: 'silent', name: 'test' }),
    policy,
    transports: { send: async () => outcome },
  });
  const now = Date.now();
  const claim = await claimWake({ userId: device.userId, deviceId: device.deviceId, now });
  expect(claim.status).toBe('claimed');
  if (claim.status !== 'claimed') return;
  await sendWake({ registrationId: claim.registrationId, userId: device.userId, deviceId: device.deviceId, priority: claim.priority, now });
}

interface DeliveryState {
  last_woken_at: string | null;
  last_drained_at: string | null;
  delivery: Record<string, unknown>;
}

async function delivery(device: Phone): Promise<DeliveryState> {
  const response = await checked(api)('GET', '/api/push/registration', { token: device.token });
  expect(response.status, response.text).toBe(200);
  return response.json as DeliveryState;
}

async function drain(device: Phone): Promise<void> {
  const response = await checked(api)('POST', '/api/push/drain', { token: device.token });
  expect(response.status, response.text).toBe(200);
}

/** Lets the device's next claim through at once: as if the back-off and the interval were over. */
async function nextWakeDue(device: Phone): Promise<void> {
  await db.pool.query(
    sql.unsafe`UPDATE push_registrations SET backoff_until = now() - interval '1 second', last_woken_at = NULL, wake_outstanding = false WHERE id = ${device.registrationId}`,
  );
}

const ok = { state: 'ok', failures: 0, wakes_since_drain: 0, priority_lowered: false };

const deferred = (cause: DeferralHold, extra: Partial<Extract<DeliveryOutcome, { kind: 'deferred' }>> = {}): DeliveryOutcome => ({
  kind: 'deferred',
  cause,
  reason: `test ${cause}`,
  counts: cause === 'failing',
  ...extra,
});

describe('the delivery state of GET /api/push/registration', () => {
  it('is ok and never woken for a new registration', async () => {
    const device = await phone('unifiedpush');
    expect(await delivery(device)).toMatchObject({ last_woken_at: null, last_drained_at: null, delivery: ok });
  });

  it.each([
    ['rate_limited', () => deferred('rate_limited', { until: Date.now() + 3_600_000 }), 3_600_000],
    ['outage', () => deferred('outage', { origin: 'unifiedpush ntfy.example' }), undefined],
    ['failing', () => deferred('failing'), undefined],
  ] as const)('says %s, until when, and clears once a wake is delivered', async (reason, outcome, waitMs) => {
    const device = await phone('unifiedpush');
    const before = Date.now();
    await wake(device, outcome());
    const held = await delivery(device);
    expect(held.delivery).toMatchObject({ state: 'held', reason, failures: reason === 'failing' ? 1 : 0 });
    const until = Date.parse(String(held.delivery['until']));
    expect(until).toBeGreaterThan(before);
    if (waitMs !== undefined) expect(until).toBeGreaterThanOrEqual(before + waitMs);

    // Nothing reached the provider: the device was never woken, whatever the claim did.
    expect(held.last_woken_at).toBeNull();

    // The back-off ends (as its time passing, or an outage's end, does) and the next wake goes through.
    await nextWakeDue(device);
    await wake(device, { kind: 'delivered', status: 201 });
    const resumed = await delivery(device);
    expect(resumed.delivery).toEqual({ ...ok, wakes_since_drain: 1 });
    expect(Date.parse(resumed.last_woken_at ?? 'NaN')).toBeGreaterThanOrEqual(before);
  });

  it.each([
    ['rate_limited (429)', () => deferred('rate_limited', { until: Date.now() + 600_000 }), 'rate_limited'],
    ['held unsent by an outage', () => deferred('outage', { origin: 'unifiedpush ntfy.example' }), 'outage'],
    ['failing (503)', () => deferred('failing'), 'failing'],
    [
      'misconfigured',
      (): DeliveryOutcome => ({ kind: 'misconfigured', reason: 'FCM disabled: no FCM credential source on this worker' }),
      'misconfigured',
    ],
  ] as const)('keeps last_woken_at at the last wake the provider accepted when the next is %s', async (_name, outcome, reason) => {
    const device = await phone('unifiedpush');
    await wake(device, { kind: 'delivered', status: 201 });
    const woken = (await delivery(device)).last_woken_at;
    expect(woken).not.toBeNull();
    await nextWakeDue(device);
    await wake(device, outcome());
    const held = await delivery(device);
    expect(held.delivery).toMatchObject({ state: 'held', reason, wakes_since_drain: 1 });
    expect(held.last_woken_at).toBe(woken);
  });

  it('counts wakes since the drain, and the drain says when it happened', async () => {
    const device = await phone('unifiedpush');
    for (let i = 0; i < 3; i++) {
      await nextWakeDue(device);
      await wake(device, { kind: 'delivered', status: 201 });
    }
    const undrained = await delivery(device);
    expect(undrained.delivery).toMatchObject({ state: 'ok', wakes_since_drain: 3 });
    expect(undrained.last_drained_at).toBeNull();
    const before = Date.now();
    await drain(device);
    const drained = await delivery(device);
    expect(drained.delivery).toMatchObject({ wakes_since_drain: 0 });
    expect(Date.parse(drained.last_drained_at ?? 'NaN')).toBeGreaterThanOrEqual(before - 1_000);
    expect(drained.last_woken_at).toBe(undrained.last_woken_at);
  });

  it('does not count a wake the device drained before its delivery was recorded', async () => {
    const device = await phone('unifiedpush');
    const { claimWake, sendWake } = createRegistrationActivities({
      pool: db.pool,
      log: createLogger({ level: 'silent', name: 'test' }),
      policy,
      // The phone gets the wake and drains before the provider's answer is recorded.
      transports: { send: async () => (await drain(device), { kind: 'delivered', status: 201 }) },
    });
    const now = Date.now();
    const claim = await claimWake({ userId: device.userId, deviceId: device.deviceId, now });
    expect(claim.status).toBe('claimed');
    await sendWake({ registrationId: device.registrationId, userId: device.userId, deviceId: device.deviceId, priority: 'normal', now });
    expect((await delivery(device)).delivery).toMatchObject({ wakes_since_drain: 0 });
  });

  it('says budget for an FCM device whose server-channel wakes spent its budget down to the DM reserve', async () => {
    const device = await phone('fcm');
    await wake(device, { kind: 'delivered', status: 200 }); // burst 2, reserve 1: one normal wake spends what channels may
    await db.pool.query(sql.unsafe`UPDATE push_registrations SET wake_outstanding = false, last_woken_at = NULL WHERE id = ${device.registrationId}`);
    const held = await delivery(device);
    expect(held.delivery).toMatchObject({ state: 'held', reason: 'budget', failures: 0, wakes_since_drain: 1 });
    expect(Date.parse(String(held.delivery['until']))).toBeGreaterThan(Date.now());

    // A DM may spend the reserve: with one pending, nothing holds the device back.
    await addPending(db.pool, device.registrationId, [{ channelId: await createDm(db.pool, [device.userId]), isDm: true, firstAt: new Date() }]);
    expect((await delivery(device)).delivery).toEqual({ ...ok, wakes_since_drain: 1 });
  });

  it("shows the caller's own device only", async () => {
    const held = await phone('unifiedpush');
    await wake(held, deferred('rate_limited', { until: Date.now() + 600_000 }));
    const other = await phone('unifiedpush');
    expect((await delivery(held)).delivery).toMatchObject({ state: 'held', reason: 'rate_limited' });
    expect((await delivery(other)).delivery).toEqual(ok);
  });

  it('is returned by PUT too, and a new endpoint starts without the old one’s back-off', async () => {
    const device = await phone('unifiedpush');
    await wake(device, deferred('rate_limited', { until: Date.now() + 3_600_000 }));
    const again = await checked(api)('PUT', '/api/push/registration', {
      token: device.token,
      body: { transport: 'unifiedpush', token: `https://ntfy.example/up${nextId()}?up=1` },
    });
    expect(again.status, again.text).toBe(200);
    expect((again.json as { delivery: unknown }).delivery).toEqual(ok);
  });
});

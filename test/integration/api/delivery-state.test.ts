/**
 * The device's own delivery state in `GET`/`PUT /api/push/registration`: each cause that holds
 * its wakes back, as the real claim and send activities record it on PostgreSQL, shows with
 * until when — and clears once a wake is delivered again. Only the caller's device is shown.
 */
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRegistrationActivities } from '../../../activities/registration.js';
import { createLogger } from '../../../src/log.js';
import type { DeferralCause, DeliveryOutcome } from '../../../src/transports/types.js';
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

async function delivery(device: Phone): Promise<{ last_woken_at: string | null; delivery: Record<string, unknown> }> {
  const response = await checked(api)('GET', '/api/push/registration', { token: device.token });
  expect(response.status, response.text).toBe(200);
  return response.json as { last_woken_at: string | null; delivery: Record<string, unknown> };
}

const deferred = (cause: DeferralCause, extra: Partial<Extract<DeliveryOutcome, { kind: 'deferred' }>> = {}): DeliveryOutcome => ({
  kind: 'deferred',
  cause,
  reason: `test ${cause}`,
  counts: cause === 'failing',
  ...extra,
});

describe('the delivery state of GET /api/push/registration', () => {
  it('is ok and never woken for a new registration', async () => {
    const device = await phone('unifiedpush');
    expect(await delivery(device)).toMatchObject({ last_woken_at: null, delivery: { state: 'ok', failures: 0 } });
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

    // The back-off ends (as its time passing, or an outage's end, does) and the next wake goes through.
    await db.pool.query(
      sql.unsafe`UPDATE push_registrations SET backoff_until = now() - interval '1 second', last_woken_at = NULL WHERE id = ${device.registrationId}`,
    );
    await wake(device, { kind: 'delivered' });
    const resumed = await delivery(device);
    expect(resumed.delivery).toEqual({ state: 'ok', failures: 0 });
    expect(Date.parse(resumed.last_woken_at ?? 'NaN')).toBeGreaterThanOrEqual(before);
  });

  it('says budget for an FCM device whose server-channel wakes spent its budget down to the DM reserve', async () => {
    const device = await phone('fcm');
    await wake(device, { kind: 'delivered' }); // burst 2, reserve 1: one normal wake spends what channels may
    await db.pool.query(sql.unsafe`UPDATE push_registrations SET wake_outstanding = false, last_woken_at = NULL WHERE id = ${device.registrationId}`);
    const held = await delivery(device);
    expect(held.delivery).toMatchObject({ state: 'held', reason: 'budget', failures: 0 });
    expect(Date.parse(String(held.delivery['until']))).toBeGreaterThan(Date.now());

    // A DM may spend the reserve: with one pending, nothing holds the device back.
    await addPending(db.pool, device.registrationId, [{ channelId: await createDm(db.pool, [device.userId]), isDm: true, firstAt: new Date() }]);
    expect((await delivery(device)).delivery).toEqual({ state: 'ok', failures: 0 });
  });

  it("shows the caller's own device only", async () => {
    const held = await phone('unifiedpush');
    await wake(held, deferred('rate_limited', { until: Date.now() + 600_000 }));
    const other = await phone('unifiedpush');
    expect((await delivery(held)).delivery).toMatchObject({ state: 'held', reason: 'rate_limited' });
    expect((await delivery(other)).delivery).toEqual({ state: 'ok', failures: 0 });
  });

  it('is returned by PUT too, and a new endpoint starts without the old one’s back-off', async () => {
    const device = await phone('unifiedpush');
    await wake(device, deferred('rate_limited', { until: Date.now() + 3_600_000 }));
    const again = await checked(api)('PUT', '/api/push/registration', {
      token: device.token,
      body: { transport: 'unifiedpush', token: `https://ntfy.example/up${nextId()}?up=1` },
    });
    expect(again.status, again.text).toBe(200);
    expect((again.json as { delivery: unknown }).delivery).toEqual({ state: 'ok', failures: 0 });
  });
});

/**
 * `POST /api/push/registration/test`: asks the device's workflow for one test wake — the row
 * says a test wake is pending, the workflow is signalled `pending` — and answers 202 with the
 * registration as `GET` shows it, so a test wake held back says why. At most one per device per
 * minute, whichever api replica is asked: a second is 429 with `Retry-After`, and changes nothing.
 * (That the wake goes out and the phone drains it: test/integration/stack/test-wake.test.ts.)
 */
import { sql } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { signDeviceToken, testJwtSecret } from '../../support/jwt.js';
import { createUser, nextId, registrationId, signIn, snapshot } from './host.js';
import { checked } from './openapi.js';
import { seenWorkflow, terminateAll } from './temporal.js';

const taskQueue = `api-test-wake-${nextId()}`;
let db: TestDatabase;
let api: TestApi;
let replica: TestApi;

beforeAll(async () => {
  db = await freshDatabase();
  // Two replicas of the api on one database: the limit is PostgreSQL's, not a replica's.
  api = await startTestApi({ db, taskQueue, env: { PUSH_UP_ALLOW_PRIVATE: 'true' } });
  replica = await startTestApi({ db, taskQueue, env: { PUSH_UP_ALLOW_PRIVATE: 'true' } });
});
afterAll(async () => {
  await terminateAll(api.temporal.client, taskQueue);
  await api?.close();
  await replica?.close();
  await db?.drop();
});

async function registeredDevice() {
  const user = await createUser(db.pool);
  const deviceId = `phone-${nextId()}`;
  const token = await signDeviceToken({ userId: user, deviceId, secret: testJwtSecret });
  await signIn(db.pool, user, deviceId);
  const put = await checked(api)('PUT', '/api/push/registration', {
    token,
    body: { transport: 'unifiedpush', token: `https://ntfy.example/${deviceId}` },
  });
  expect(put.status, put.text).toBe(200);
  return { user, deviceId, token, registration: await registrationId(db.pool, user, deviceId) };
}

const testWake = (on: TestApi, token: string) => checked(on)('POST', '/api/push/registration/test', { token });
const pendingTest = (registration: string) =>
  db.pool.oneFirst(
    sql.type(z.object({ test_wake_pending: z.boolean() }))`SELECT test_wake_pending FROM push_registrations WHERE id = ${registration}`,
  );

describe('POST /api/push/registration/test', () => {
  it('asks the workflow for a test wake and answers 202 with the registration as GET shows it', async () => {
    const device = await registeredDevice();
    const response = await testWake(api, device.token);
    expect(response.status, response.text).toBe(202);
    const get = await checked(api)('GET', '/api/push/registration', { token: device.token });
    expect(response.json).toEqual(get.json);
    expect(response.json).toMatchObject({ transport: 'unifiedpush', last_woken_at: null, delivery: { state: 'ok', wakes_since_drain: 0 } });
    expect(await pendingTest(device.registration)).toBe(true);
    const workflow = await seenWorkflow(api.temporal.client, device.user, device.deviceId);
    expect(workflow?.signals.map((s) => s.name)).toContain('pending');
  });

  it('says why a test wake is held back: the distributor asked us to wait', async () => {
    const device = await registeredDevice();
    const until = new Date(Date.now() + 600_000);
    await db.pool.query(sql.unsafe`
      UPDATE push_registrations SET backoff_until = ${until.toISOString()}, backoff_cause = 'rate_limited', backoff_reason = 'UnifiedPush 429: rate limited'
      WHERE id = ${device.registration}`);
    const response = await testWake(api, device.token);
    expect(response.status, response.text).toBe(202);
    expect((response.json as { delivery: unknown }).delivery).toEqual({
      state: 'held',
      reason: 'rate_limited',
      until: until.toISOString(),
      failures: 0,
      wakes_since_drain: 0,
      priority_lowered: false,
    });
  });

  it('allows one a minute per device, across api replicas: beyond, 429 with Retry-After, nothing changed', async () => {
    const device = await registeredDevice();
    expect((await testWake(api, device.token)).status).toBe(202);
    const before = await snapshot(db.pool);
    for (const on of [api, replica]) {
      const again = await testWake(on, device.token);
      expect(again.status, again.text).toBe(429);
      expect(again.json).toMatchObject({ error: 'rate_limited', message: expect.stringMatching(/^one test wake a minute: try again in \d+ s$/) });
      const retryAfter = Number(again.headers['retry-after']);
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
    }
    expect(await snapshot(db.pool)).toBe(before);
    // Another device of the same user has a minute of its own.
    const tablet = await registeredDevice();
    expect((await testWake(replica, tablet.token)).status).toBe(202);
    // A minute later (moved back in time here), the device may test again.
    await db.pool.query(sql.unsafe`
      UPDATE push_registrations SET test_wake_requested_at = test_wake_requested_at - interval '61 seconds' WHERE id = ${device.registration}`);
    expect((await testWake(replica, device.token)).status).toBe(202);
  });

  it('is 404 for a device without a registration', async () => {
    const token = await signDeviceToken({ userId: await createUser(db.pool), deviceId: 'unregistered', secret: testJwtSecret });
    const response = await testWake(api, token);
    expect(response.status).toBe(404);
    expect(response.json).toMatchObject({ error: 'not_found' });
  });
});

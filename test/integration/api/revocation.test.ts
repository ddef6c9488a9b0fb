/**
 * `DELETE /api/keys/devices/{device_id}`: a device's key bundle, sessions and
 * push registration go together, in one transaction, and its workflow is told to stop.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { sql } from 'slonik';
import { z } from 'zod';
import { waitFor } from '../../../devstack/daemons.js';
import { startTestApi, type TestApi } from '../../support/api.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { signDeviceToken, testJwtSecret } from '../../support/jwt.js';
import { addPending, createDm, createUser, nextId, pendingChannels, registrationId, registrationRowOf, snapshot } from './host.js';
import { checked } from './openapi.js';
import { registeredWorkflow, seenWorkflow, terminateAll } from './temporal.js';

const taskQueue = `api-revocation-${nextId()}`;

let db: TestDatabase;
let api: TestApi;

beforeAll(async () => {
  db = await freshDatabase();
  api = await startTestApi({ db, taskQueue, env: { PUSH_UP_ALLOW_PRIVATE: 'true' } });
});

afterAll(async () => {
  await terminateAll(api.temporal.client, taskQueue);
  await api?.close();
  await db?.drop();
});

const tokenOf = (userId: string, deviceId: string) => signDeviceToken({ userId, deviceId, secret: testJwtSecret });
const revoke = async (userId: string, callerDevice: string, target: string) =>
  checked(api)('DELETE', `/api/keys/devices/${encodeURIComponent(target)}`, { token: await tokenOf(userId, callerDevice) });

/** A device with everything revocation removes: keys, two sessions, a registration with a pending row. */
async function fullDevice(userId: string, deviceId: string): Promise<string> {
  await db.pool.query(sql.unsafe`INSERT INTO device_keys (user_id, device_id, identity_key) VALUES (${userId}, ${deviceId}, '\\x01')`);
  await db.pool.query(sql.unsafe`
    INSERT INTO refresh_tokens (user_id, device_id, expires_at) VALUES
      (${userId}, ${deviceId}, now() + interval '30 days'), (${userId}, ${deviceId}, now() + interval '1 day')
  `);
  const put = await api.request('PUT', '/api/push/registration', {
    token: await tokenOf(userId, deviceId),
    body: { transport: 'unifiedpush', token: `https://ntfy.example/${nextId()}` },
  });
  expect(put.status).toBe(200);
  await registeredWorkflow(api.temporal.client, userId, deviceId);
  const registration = await registrationId(db.pool, userId, deviceId);
  await addPending(db.pool, registration, [
    { channelId: await createDm(db.pool, [userId, await createUser(db.pool)]), isDm: true, firstAt: new Date() },
  ]);
  return registration;
}

const counts = z.object({ keys: z.number(), sessions: z.number(), registrations: z.number() });
async function whatRemains(userId: string, deviceId: string) {
  return db.pool.one(sql.type(counts)`
    SELECT
      (SELECT count(*) FROM device_keys WHERE user_id = ${userId} AND device_id = ${deviceId})::int AS keys,
      (SELECT count(*) FROM refresh_tokens WHERE user_id = ${userId} AND device_id = ${deviceId})::int AS sessions,
      (SELECT count(*) FROM push_registrations WHERE user_id = ${userId} AND device_id = ${deviceId})::int AS registrations
  `);
}

describe('DELETE /api/keys/devices/{device_id}', () => {
  it('removes keys, sessions, registration and pending rows of that device only, and stops its workflow', async () => {
    const user = await createUser(db.pool);
    const registration = await fullDevice(user, 'phone');
    await fullDevice(user, 'laptop');

    const response = await revoke(user, 'laptop', 'phone');
    expect(response.status).toBe(204);
    expect(await whatRemains(user, 'phone')).toEqual({ keys: 0, sessions: 0, registrations: 0 });
    expect(await pendingChannels(db.pool, registration)).toEqual([]);
    expect(await whatRemains(user, 'laptop')).toEqual({ keys: 1, sessions: 2, registrations: 1 });
    const workflow = await seenWorkflow(api.temporal.client, user, 'phone');
    expect(workflow?.signals.map((signal) => signal.name)).toEqual(['registered', 'stop']);

    expect((await revoke(user, 'laptop', 'phone')).status).toBe(404);
  });

  it('a device may revoke itself', async () => {
    const user = await createUser(db.pool);
    await fullDevice(user, 'phone');
    expect((await revoke(user, 'phone', 'phone')).status).toBe(204);
    expect(await whatRemains(user, 'phone')).toEqual({ keys: 0, sessions: 0, registrations: 0 });
  });

  it('revokes a device that has only some of the three (sessions, no keys or registration)', async () => {
    const user = await createUser(db.pool);
    await db.pool.query(sql.unsafe`INSERT INTO refresh_tokens (user_id, device_id, expires_at) VALUES (${user}, 'old', now() + interval '1 day')`);
    expect((await revoke(user, 'phone', 'old')).status).toBe(204);
    expect(await whatRemains(user, 'old')).toEqual({ keys: 0, sessions: 0, registrations: 0 });
  });

  it("is 404 for an unknown device, and for another user's device of the same name, changing nothing", async () => {
    const [owner, stranger] = [await createUser(db.pool), await createUser(db.pool)];
    await fullDevice(owner, 'phone');
    const before = await snapshot(db.pool);
    expect((await revoke(owner, 'phone', 'no-such-device')).status).toBe(404);
    const response = await revoke(stranger, 'phone', 'phone');
    expect(response.status).toBe(404);
    expect(response.json).toEqual({ error: 'not_found', message: expect.any(String) });
    expect(await snapshot(db.pool)).toBe(before);
  });

  it('takes any device id as a percent-encoded path segment', async () => {
    const user = await createUser(db.pool);
    const odd = 'tablet/2 ü:😀';
    await fullDevice(user, odd);
    expect((await revoke(user, 'phone', odd)).status).toBe(204);
    expect(await whatRemains(user, odd)).toEqual({ keys: 0, sessions: 0, registrations: 0 });
  });

  it.each([
    ['129 characters', 'x'.repeat(129)],
    ['a NUL', 'a\u0000b'],
    ['a newline', 'a\nb'],
    ['an escape character', '\u001b[31m'],
  ])('refuses a device id of %s with 400, changing nothing', async (_name, deviceId) => {
    const user = await createUser(db.pool);
    const before = await snapshot(db.pool);
    const response = await revoke(user, 'phone', deviceId);
    expect(response.status).toBe(400);
    expect((response.json as { error: string }).error).toBe('invalid_request');
    expect(await snapshot(db.pool)).toBe(before);
  });
});

describe('revocation atomicity', () => {
  it('while the revocation waits on a lock, readers still see all three; afterwards none', async () => {
    const user = await createUser(db.pool);
    const registration = await fullDevice(user, 'phone');
    const token = await tokenOf(user, 'laptop');
    let responseStatus: number | undefined;
    let pending: Promise<unknown> | undefined;

    // A plain pg client holds the lock: slonik refuses other queries while inside its own transaction.
    const locker = new pg.Client({ connectionString: db.url });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      // Hold the registration row, as a concurrent writer (the worker claiming a wake) might.
      await locker.query('SELECT 1 FROM push_registrations WHERE id = $1 FOR UPDATE', [registration]);
      pending = api.request('DELETE', '/api/keys/devices/phone', { token }).then((response) => (responseStatus = response.status));
      await waitFor(
        'the revocation to block on the held row',
        async () =>
          (await db.pool.exists(sql.type(z.object({ found: z.number() }))`
            SELECT 1 AS found FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%DELETE FROM device_keys%'
          `)) || undefined,
        30_000,
      );
      // Part of that statement may already have run; none of it is visible until it commits.
      expect(await whatRemains(user, 'phone')).toEqual({ keys: 1, sessions: 2, registrations: 1 });
      expect(responseStatus).toBeUndefined();
      await locker.query('COMMIT');
    } finally {
      await locker.end();
    }
    await pending;
    expect(responseStatus).toBe(204);
    expect(await whatRemains(user, 'phone')).toEqual({ keys: 0, sessions: 0, registrations: 0 });
  });

  it('a PUT from the device while its revocation is in progress stores nothing', async () => {
    const user = await createUser(db.pool);
    // Keys and sessions, no registration yet: the PUT would create one.
    await db.pool.query(sql.unsafe`INSERT INTO device_keys (user_id, device_id, identity_key) VALUES (${user}, 'phone', '\\x01')`);
    await db.pool.query(
      sql.unsafe`INSERT INTO refresh_tokens (user_id, device_id, expires_at) VALUES (${user}, 'phone', now() + interval '30 days')`,
    );
    const waiting = (text: string) => async () =>
      (await db.pool.exists(sql.type(z.object({ found: z.number() }))`
        SELECT 1 AS found FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type IN ('Lock', 'advisory') AND query LIKE ${`%${text}%`}
      `)) || undefined;

    const locker = new pg.Client({ connectionString: db.url });
    await locker.connect();
    let revocation: Promise<number> | undefined;
    let put: Promise<number> | undefined;
    let putDone = false;
    try {
      await locker.query('BEGIN');
      // The revocation, from the user's laptop, is under way: it waits on the key bundle's row.
      await locker.query(`SELECT 1 FROM device_keys WHERE user_id = $1 AND device_id = 'phone' FOR UPDATE`, [user]);
      revocation = api.request('DELETE', '/api/keys/devices/phone', { token: await tokenOf(user, 'laptop') }).then((r) => r.status);
      await waitFor('the revocation to block on the held row', waiting('DELETE FROM device_keys'), 30_000);
      // Meanwhile the phone, its access token not expired yet, registers.
      put = api
        .request('PUT', '/api/push/registration', {
          token: await tokenOf(user, 'phone'),
          body: { transport: 'unifiedpush', token: 'https://ntfy.example/late' },
        })
        .then((r) => ((putDone = true), r.status));
      await waitFor('the PUT to answer or to wait for the revocation', async () => putDone || (await waiting('pg_advisory_xact_lock')()), 30_000);
      await locker.query('COMMIT');
    } finally {
      await locker.end();
    }
    expect(await revocation).toBe(204);
    expect(await put).toBe(401);
    expect(await whatRemains(user, 'phone')).toEqual({ keys: 0, sessions: 0, registrations: 0 });
  });

  it('a failure in any part leaves every part in place', async () => {
    const user = await createUser(db.pool);
    await fullDevice(user, 'doomed');
    // Make the last of the three deletions fail, for this one device only.
    await db.pool.query(sql.unsafe`
      CREATE FUNCTION refuse_doomed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF OLD.device_id = 'doomed' THEN RAISE EXCEPTION 'injected failure'; END IF;
        RETURN OLD;
      END $$
    `);
    await db.pool.query(sql.unsafe`CREATE TRIGGER refuse_doomed BEFORE DELETE ON push_registrations FOR EACH ROW EXECUTE FUNCTION refuse_doomed()`);
    try {
      const response = await api.request('DELETE', '/api/keys/devices/doomed', { token: await tokenOf(user, 'phone') });
      expect(response.status).toBe(500);
      expect(response.json).toEqual({ error: 'internal', message: 'internal error' });
      expect(await whatRemains(user, 'doomed')).toEqual({ keys: 1, sessions: 2, registrations: 1 });
      expect(await registrationRowOf(db.pool, user, 'doomed')).not.toBeNull();
    } finally {
      await db.pool.query(sql.unsafe`DROP TRIGGER refuse_doomed ON push_registrations`);
      await db.pool.query(sql.unsafe`DROP FUNCTION refuse_doomed()`);
    }
  });
});

/**
 * One send attempt at a time: the send activity's time limit covers its worst case (an OAuth
 * token, the POST, a 401, a fresh token, the POST again: domain/send-time-limit.ts), and a
 * cancelled attempt (its time-out, a worker shutting down) aborts its request and records
 * nothing, so that no two attempts send, delete or back off at once.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { CancelledFailure } from '@temporalio/activity';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRegistrationActivities } from '../../activities/registration.js';
import { waitFor } from '../../devstack/daemons.js';
import { createFcmStandIn, googleStatusError } from '../../devstack/stand-ins/fcm.js';
import { createGoogleOAuth, createServiceAccount } from '../../devstack/stand-ins/google-oauth.js';
import { loadConfig } from '../../src/config/index.js';
import { createLogger } from '../../src/observability/log.js';
import { createTransports } from '../../src/transports/index.js';
import { requestDeadlineMs, sendAttemptTimeoutMs } from '../../domain/send-time-limit.js';
import { createDeviceKeys, startDistributor } from '../../simulator/distributor.js';
import { startServer } from '../../simulator/loopback-server.js';
import { registrationWorkflowId } from '../../temporal/names.js';
import { signalPending, signalRegistered } from '../../temporal/registration-workflows.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { startDevWorker } from '../support/dev-worker.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await freshDatabase();
});
afterAll(async () => {
  await db?.drop();
});

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Google's token endpoint and FCM, each answering `delayMs` late (their checks as ever): a slow network. */
async function slowGoogle(delayMs: number) {
  const account = createServiceAccount('zippchat-test');
  const oauth = createGoogleOAuth({ account });
  let tokenUrl = '';
  const oauthServer = await startServer(async (incoming, response) => {
    await pause(delayMs);
    await oauth.handle(incoming, response, tokenUrl);
  });
  tokenUrl = `${oauthServer.url}/token`;
  const fcm = createFcmStandIn({ projectId: account.projectId, isAuthorized: (bearer) => oauth.isValid(bearer) });
  const fcmServer = await startServer(async (incoming, response) => {
    await pause(delayMs);
    fcm.handle(incoming, response);
  });
  return {
    fcm,
    oauth,
    env: { FCM_PROJECT_ID: account.projectId, FCM_CREDENTIALS_JSON: account.keyFile(tokenUrl), FCM_ENDPOINT: fcmServer.url },
    async close() {
      await fcmServer.close();
      await oauthServer.close();
    },
  };
}

describe('the send activity’s time limit', () => {
  it('is derived from its worst case: two OAuth requests and two POSTs, and the bookkeeping', () => {
    expect(sendAttemptTimeoutMs).toBeGreaterThanOrEqual(2 * (requestDeadlineMs.oauth + requestDeadlineMs.fcm));
    expect(sendAttemptTimeoutMs).toBeGreaterThan(requestDeadlineMs.unifiedPush);
  });

  it('lets a slow FCM send after a 401 finish in one attempt: one delivery, no second attempt beside it', async () => {
    // Each of the four requests answers 6 s late: 24 s in all, within the deadlines of each,
    // beyond a limit of 20 s. A cut attempt retried beside itself would POST a third time.
    const google = await slowGoogle(6_000);
    const fcm = google.fcm;
    const taskQueue = `send-time-limit-${Date.now()}`;
    const worker = await startDevWorker(db, { taskQueue, env: google.env });
    try {
      await db.pool.query(sql.unsafe`INSERT INTO users (id, username) VALUES (1, 'slow')`);
      const device = { userId: '1', deviceId: 'phone-1' };
      const token = `slow-token:APA91b${'s'.repeat(120)}`;
      await db.pool.query(sql.unsafe`INSERT INTO push_registrations (user_id, device_id, transport, token) VALUES (1, 'phone-1', 'fcm', ${token})`);
      await db.pool.query(sql.unsafe`
        INSERT INTO push_pending (registration_id, channel_id, message_count, first_message_id, first_at, last_message_id, is_dm)
        SELECT id, 10, 1, 1, now(), 1, true FROM push_registrations WHERE user_id = 1`);
      fcm.script(googleStatusError(401, 'UNAUTHENTICATED')); // the first token is refused: fetch another, POST again
      await signalRegistered(worker.client, taskQueue, device, 'fcm');
      await signalPending(worker.client, taskQueue, device, 'fcm');
      // The send is over when its local activity's result is in the history (after the claim's).
      const handle = worker.client.workflow.getHandle(registrationWorkflowId('1', 'phone-1'));
      await waitFor(
        'the send recorded',
        async () =>
          ((await handle.fetchHistory()).events ?? []).filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity').length >=
          2,
        90_000,
      );
      const posts = fcm.received.filter((r) => r.token === token);
      expect(posts.map((r) => r.answered)).toEqual([401, 200]);
      expect(await db.pool.oneFirst(sql.type(z.object({ failures: z.number() }))`SELECT failures FROM push_registrations WHERE user_id = 1`)).toBe(0);
    } finally {
      await worker.stop();
      await google.close();
    }
  }, 150_000);
});

describe('a cancelled send', () => {
  it('aborts its request at once and records nothing: no failure, no back-off, no outage', async () => {
    const distributor = await startDistributor();
    const config = loadConfig('worker', { DATABASE_URL: db.url, PUSH_UP_ALLOW_PRIVATE: 'true', PUSH_UP_ALLOW_HTTP: 'true' });
    const transports = createTransports(config, createLogger({ level: 'silent', name: 'test' }), { unifiedPushDeadlineMs: 60_000 });
    try {
      const activities = createRegistrationActivities({
        pool: db.pool,
        log: createLogger({ level: 'silent', name: 'test' }),
        policy: { minIntervalMs: 15_000, rewakeAfterMs: 900_000, fcmBudget: { burst: 0, refillMs: 180_000, dmReserve: 0 } },
        transports,
      });
      const keys = createDeviceKeys();
      const endpoint = distributor.register(keys);
      distributor.answerFor(endpoint, { hang: true });
      await db.pool.query(sql.unsafe`INSERT INTO users (id, username) VALUES (2, 'hung')`);
      const id = await db.pool.oneFirst(sql.type(z.object({ id: z.string() }))`
        INSERT INTO push_registrations (user_id, device_id, transport, token, up_p256dh, up_auth, wake_outstanding, last_woken_at)
        VALUES (2, 'phone-2', 'unifiedpush', ${endpoint}, ${sql.binary(keys.p256dh)}, ${sql.binary(keys.auth)}, true, now())
        RETURNING id::text AS id`);
      const env = new MockActivityEnvironment();
      const sending = env.run(activities.sendWake, {
        registrationId: id,
        userId: '2',
        deviceId: 'phone-2',
        priority: 'high' as const,
        now: Date.now(),
      });
      const settled = sending.then(
        () => 'resolved',
        (error: unknown) => error,
      );
      await waitFor('the request reached the distributor', async () => distributor.received.length === 1, 10_000);
      env.cancel('TIMED_OUT');
      // Not the request's own answer at its 60 s deadline (`deferred`): the cancellation's.
      expect(await settled).toBeInstanceOf(CancelledFailure);
      const row = await db.pool.one(sql.type(z.object({ failures: z.number(), backoff_until: z.date().nullable(), wake_outstanding: z.boolean() }))`
        SELECT failures, backoff_until, wake_outstanding FROM push_registrations WHERE id = ${id}`);
      expect(row).toEqual({ failures: 0, backoff_until: null, wake_outstanding: true });
      expect(transports.detector.summaries(Date.now()).size).toBe(0);
    } finally {
      await transports.close();
      await distributor.close();
    }
  });
});

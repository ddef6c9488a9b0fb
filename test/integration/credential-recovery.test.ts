/**
 * FCM credentials that start working while a wake held back for want of a token is still being
 * recorded. The worker announces the recovery when the token comes, and the outage coordinator
 * ends every `misconfigured fcm` hold it finds then — but a hold committed a moment later was
 * not there to be found, and would wait out its own back-off (5 minutes, up to an hour). The
 * send activity says when such a hold is committed, and the worker, whose credentials work
 * now, announces the recovery again. A hold for another configuration error (FCM refusing our
 * project with a working token) is not ended that way: it would be a retry loop.
 *
 * Real PostgreSQL, the real transports with a fake Google OAuth and FCM, the real coordinator
 * (rounds run by the test, in the order the race needs), the real send activity.
 */
import { Client, Connection } from '@temporalio/client';
import { sql } from 'slonik';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { createRegistrationActivities } from '../../activities/registration.js';
import { misconfiguredOrigin } from '../../domain/backoff.js';
import { fcmError, startFakeFcm } from '../../devstack/stand-ins/fcm.js';
import { createServiceAccount, startGoogleOAuth } from '../../devstack/stand-ins/google-oauth.js';
import { createTransports, type Transports } from '../../src/transports/index.js';
import type { WakeSender } from '../../src/transports/types.js';
import { startOutageCoordinator, type OutageCoordinator } from '../../src/worker/outage-coordinator.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { captureLog, workerConfig } from '../unit/transports/helpers.js';
import '../support/provided.js';

const projectId = 'zippchat-test';
let db: TestDatabase;
let connection: Connection;
const cleanups: Array<() => Promise<void> | void> = [];
beforeAll(async () => {
  db = await freshDatabase();
  await db.pool.query(sql.unsafe`INSERT INTO users (id, username) VALUES (1, 'alice')`);
  connection = await Connection.connect({ address: inject('temporalAddress') });
});
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});
afterAll(async () => {
  await connection?.close();
  await db?.drop();
});

let nextDevice = 1;

/** An FCM registration whose wake was just claimed, with a message pending. */
async function claimed(): Promise<{ id: string; deviceId: string }> {
  const deviceId = `credential-phone-${nextDevice++}`;
  const id = await db.pool.oneFirst(sql.type(z.object({ id: z.string() }))`
    INSERT INTO push_registrations (user_id, device_id, transport, token, wake_outstanding, last_woken_at)
    VALUES (1, ${deviceId}, 'fcm', ${`fcm-token-${deviceId}`}, true, now()) RETURNING id`);
  await db.pool.query(sql.unsafe`
    INSERT INTO push_pending (registration_id, channel_id, message_count, first_message_id, first_at, last_message_id, is_dm)
    VALUES (${id}, 10, 1, 1, now(), 1, true)`);
  return { id, deviceId };
}

async function heldBy(id: string): Promise<string | null> {
  return db.pool.oneFirst(sql.type(z.object({ backoff_origin: z.string().nullable() }))`
    SELECT backoff_origin FROM push_registrations WHERE id = ${id}`);
}

/** A worker's transports on a fake Google whose token endpoint refuses the key, and its coordinator. */
async function workerParts(): Promise<{
  transports: Transports;
  health: OutageCoordinator;
  heal: () => void;
  fcm: Awaited<ReturnType<typeof startFakeFcm>>;
}> {
  const account = createServiceAccount(projectId);
  const oauth = await startGoogleOAuth({ account });
  cleanups.push(() => oauth.close());
  oauth.answerAll({ status: 400, body: { error: 'invalid_grant', error_description: 'Invalid JWT Signature.' } });
  const fcm = await startFakeFcm({ projectId, isAuthorized: (bearer) => oauth.isValid(bearer) });
  cleanups.push(() => fcm.close());
  const config = workerConfig({ FCM_PROJECT_ID: projectId, FCM_ENDPOINT: fcm.url, FCM_CREDENTIALS_JSON: account.keyFile(oauth.url) });
  const transports = createTransports(config, captureLog().log);
  cleanups.push(() => transports.close());
  const health = startOutageCoordinator({
    pool: db.pool,
    transports,
    temporal: new Client({ connection }),
    taskQueue: `credential-recovery-${process.pid}`,
    log: captureLog().log,
    intervalMs: 0,
  });
  cleanups.push(() => health.stop());
  return { transports, health, heal: () => oauth.answerAll(undefined), fcm };
}

function sendActivity(transports: WakeSender) {
  return createRegistrationActivities({
    pool: db.pool,
    log: captureLog().log,
    policy: { minIntervalMs: 15_000, rewakeAfterMs: 900_000, fcmBudget: { burst: 20, refillMs: 180_000, dmReserve: 5 } },
    transports,
  }).sendWake;
}

describe('FCM credentials that start working while a held-back wake is being recorded', () => {
  it('end that hold too, at the next round', async () => {
    const { transports, health, heal } = await workerParts();
    const device = await claimed();
    // The send fails for want of a token; before its hold is recorded the credentials work and
    // the coordinator's round ends every hold it finds — this one is not there yet.
    const sendWake = sendActivity({
      send: async (...args) => {
        const outcome = await transports.send(...args);
        heal();
        await transports.fcmTokens!.get();
        await health.round();
        return outcome;
      },
      credentialHoldRecorded: (transport) => transports.credentialHoldRecorded?.(transport),
    });

    const result = await sendWake({ registrationId: device.id, userId: '1', deviceId: device.deviceId, priority: 'high', now: Date.now() });
    expect(result).toMatchObject({ kind: 'misconfigured', reason: expect.stringContaining('FCM credentials refused') as string });
    expect(await heldBy(device.id)).toBe(misconfiguredOrigin('fcm'));

    await health.round();
    expect(await heldBy(device.id)).toBeNull();
  });

  it("leave a hold of FCM refusing our APNs credentials alone: it is not the token's, and retrying at once would loop", async () => {
    const { transports, health, heal, fcm } = await workerParts();
    heal();
    await transports.fcmTokens!.get();
    await health.round();
    fcm.answerAll(fcmError('THIRD_PARTY_AUTH_ERROR'));
    const device = await claimed();
    const sendWake = sendActivity(transports);

    const result = await sendWake({ registrationId: device.id, userId: '1', deviceId: device.deviceId, priority: 'high', now: Date.now() });
    expect(result).toMatchObject({ kind: 'misconfigured' });
    await health.round();
    expect(await heldBy(device.id)).toBe(misconfiguredOrigin('fcm'));
  });
});

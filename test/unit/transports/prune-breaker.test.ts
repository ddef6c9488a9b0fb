/**
 * The prune breaker as the FCM transport of a worker uses it, against a fake Google on loopback:
 * who counts (users, not registrations) and against what (the sends the worker made).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createSenders, type TransportOptions } from '../../../src/transports/index.js';
import { fcmError, startFakeFcm } from '../../../devstack/stand-ins/fcm.js';
import { createServiceAccount, startGoogleOAuth } from '../../../devstack/stand-ins/google-oauth.js';
import type { RegistrationForSend } from '../../../src/transports/types.js';
import { captureLog, fakeFcmToken, fcmRegistration, workerConfig } from './helpers.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

const account = createServiceAccount('zippchat-test');

async function world(options: TransportOptions) {
  const oauth = await startGoogleOAuth({ account });
  const fcm = await startFakeFcm({ projectId: account.projectId, isAuthorized: (bearer) => oauth.isValid(bearer) });
  const config = workerConfig({ FCM_PROJECT_ID: account.projectId, FCM_CREDENTIALS_JSON: account.keyFile(oauth.url), FCM_ENDPOINT: fcm.url });
  const transports = createSenders(config, captureLog().log, options);
  cleanups.push(async () => {
    await transports.close();
    await fcm.close();
    await oauth.close();
  });
  return { fcm, transport: transports.fcm };
}

const deadToken = () => fcmError('INVALID_ARGUMENT', { aboutToken: true });
const ofUser = (userId: string): RegistrationForSend => ({ ...fcmRegistration(fakeFcmToken()), userId });

describe('the FCM prune breaker on a worker', () => {
  it('one account’s many dead registrations are all pruned and never open it', async () => {
    const { fcm, transport } = await world({ breaker: { floor: 20 } });
    fcm.script(...Array.from({ length: 30 }, deadToken));
    const kinds = [];
    for (let i = 0; i < 30; i++) kinds.push((await transport.send(ofUser('mallory'), 'high')).kind);
    expect(kinds.every((kind) => kind === 'dead')).toBe(true);
    // Another user's dead token is still pruned: the breaker is closed.
    fcm.script(deadToken());
    expect((await transport.send(ofUser('alice'), 'high')).kind).toBe('dead');
  });

  it('counts every send toward its threshold: dead tokens among many deliveries are pruned', async () => {
    const { fcm, transport } = await world({ breaker: { floor: 2, share: 0.05 } });
    // 100 deliveries: 5 % of the ~105 sends is 6 users (the floor alone would allow 2).
    for (let i = 0; i < 100; i++) expect((await transport.send(ofUser(`reader-${i}`), 'normal')).kind).toBe('delivered');
    fcm.script(...Array.from({ length: 6 }, deadToken));
    const kinds = [];
    for (let i = 0; i < 6; i++) kinds.push((await transport.send(ofUser(`gone-${i}`), 'normal')).kind);
    expect(kinds).toEqual(Array.from({ length: 6 }, () => 'dead'));
    fcm.script(deadToken());
    expect((await transport.send(ofUser('gone-6'), 'normal')).kind).toBe('misconfigured');
  });
});

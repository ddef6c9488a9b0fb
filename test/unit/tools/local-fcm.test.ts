/**
 * The dev stack's local FCM, driven by the production FCM transport (OAuth from the key file's
 * token_uri, the exact wake body): a token it minted is delivered and reaches the simulated
 * phone's inbox; a token it never minted is UNREGISTERED, so the instance prunes it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServiceAccount } from '../../../devstack/stand-ins/google-oauth.js';
import { startLocalFcm, type LocalFcm } from '../../../devstack/stand-ins/local-fcm.js';
import { fcmSource } from '../../../simulator/fcm-source.js';
import { createSenders, type Senders } from '../../../src/transports/index.js';
import { captureLog, workerConfig } from '../transports/helpers.js';

let local: LocalFcm;
let transports: Senders;

beforeAll(async () => {
  const account = createServiceAccount('zippchat-dev');
  local = await startLocalFcm({ account });
  const config = workerConfig({ FCM_PROJECT_ID: account.projectId, FCM_CREDENTIALS_JSON: account.keyFile(local.tokenUrl), FCM_ENDPOINT: local.url });
  transports = createSenders(config, captureLog().log);
});
afterAll(async () => {
  await transports?.close();
  await local?.close();
});

const registration = (token: string) => ({ id: '1', userId: '1', transport: 'fcm' as const, token, p256dh: null, auth: null });

describe('local FCM stand-in', () => {
  it('delivers a wake to the phone holding the token, with its priority', async () => {
    const phone = await fcmSource(local.url);
    try {
      expect(await transports.fcm.send(registration(phone.registration.token), 'high')).toEqual({ kind: 'delivered', status: 200 });
      const wake = await phone.next(5_000);
      expect(wake).toMatchObject({ transport: 'fcm', priority: 'high', payload: '{"v":"1","t":"wake"}', problems: [] });
      expect(wake.bytes).toBe(local.fcm.received.at(-1)!.bodyBytes);
      expect(local.oauth.problems).toEqual([]);
      expect(local.fcm.problems).toEqual([]);
    } finally {
      await phone.close();
    }
  });

  it('answers UNREGISTERED for a token it never minted: the transport calls it dead', async () => {
    const outcome = await transports.fcm.send(registration('sim:not-a-token-it-minted'), 'normal');
    expect(outcome).toMatchObject({ kind: 'dead' });
    expect(local.fcm.received.at(-1)!.answered).toBe(404);
  });

  it("keeps another phone's wakes to that phone", async () => {
    const [a, b] = [await fcmSource(local.url), await fcmSource(local.url)];
    try {
      await transports.fcm.send(registration(a.registration.token), 'normal');
      expect((await a.next(5_000)).priority).toBe('normal');
      const inboxOf = async (token: string) =>
        (await fetch(`${local.url}/_device/wakes`, { method: 'POST', body: JSON.stringify({ token, wait_ms: 0 }) }).then((r) => r.json())) as {
          wakes: unknown[];
        };
      expect((await inboxOf(a.registration.token)).wakes).toHaveLength(1);
      expect((await inboxOf(b.registration.token)).wakes).toEqual([]);
    } finally {
      await a.close();
      await b.close();
    }
  });
});

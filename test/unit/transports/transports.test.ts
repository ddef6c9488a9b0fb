/**
 * createTransports as the worker uses it: FCM disabled without credentials, the transport
 * chosen per registration, metrics per outcome, and — across every kind of outcome — no
 * token, endpoint, key or access token in a log line or in an outcome (which is what reaches
 * the workflow history).
 */
import { vapidPrivateKey } from '../../support/vapid-key.js';
import { createECDH } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { createSenders, createTransports } from '../../../src/transports/index.js';
import { instrumentedSender } from '../../../src/transports/instrumented-sender.js';
import type { RegistrationForSend, ProviderAnswer } from '../../../src/transports/types.js';
import { createDeviceKeys, startDistributor } from '../../../simulator/distributor.js';
import { fcmError, startFakeFcm } from '../../../devstack/stand-ins/fcm.js';
import { createServiceAccount, startGoogleOAuth } from '../../../devstack/stand-ins/google-oauth.js';
import { captureLog, fakeFcmToken, fcmRegistration, upRegistration, workerConfig } from './helpers.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

describe('createTransports', () => {
  it('without FCM credentials logs "FCM disabled" once, answers misconfigured for FCM, and UnifiedPush still works', async () => {
    const captured = captureLog();
    const distributor = await startDistributor();
    const transports = createTransports(workerConfig({ PUSH_UP_ALLOW_PRIVATE: 'true', PUSH_UP_ALLOW_HTTP: 'true' }), captured.log);
    cleanups.push(async () => {
      await transports.close();
      await distributor.close();
    });

    const fcm = fcmRegistration(fakeFcmToken());
    expect(await transports.send(fcm, 'high', Date.now())).toEqual({
      kind: 'misconfigured',
      reason: 'FCM disabled: no FCM credential source on this worker',
    });
    expect(await transports.send(fcm, 'normal', Date.now())).toMatchObject({ kind: 'misconfigured' });
    const device = createDeviceKeys();
    const up = upRegistration(distributor.register(device), device);
    expect(await transports.send(up, 'high', Date.now())).toEqual({ kind: 'delivered', status: 201 });

    expect(captured.messages().filter((m) => m === 'FCM disabled')).toHaveLength(1);
    expect(JSON.parse(captured.lines.find((l) => l.includes('"FCM disabled"')) ?? '{}')).toMatchObject({ level: 30 });
  });

  it('with credentials does not say FCM is disabled', () => {
    const account = createServiceAccount();
    const captured = captureLog();
    const transports = createTransports(
      workerConfig({ FCM_PROJECT_ID: account.projectId, FCM_CREDENTIALS_JSON: account.keyFile('http://127.0.0.1:9/token') }),
      captured.log,
    );
    cleanups.push(() => transports.close());
    expect(captured.messages()).not.toContain('FCM disabled');
  });

  it('turns an unexpected exception into a failing answer blamed on us, logging no message', async () => {
    const captured = captureLog();
    const broken = instrumentedSender(
      {
        name: 'unifiedpush',
        send: () => {
          throw new Error('cannot post to https://ntfy.example/up/SECRET-TOPIC');
        },
      },
      captured.log,
    );
    expect(await broken.send(upRegistration('https://ntfy.example/up/SECRET-TOPIC'), 'high')).toEqual({
      kind: 'deferred',
      cause: 'failing',
      reason: 'internal error',
      blame: 'internal',
    });
    expect(captured.messages()).toContain('transport failed unexpectedly');
    expect(captured.lines.join('\n')).not.toContain('SECRET-TOPIC');
  });
});

describe('secrets stay out of logs and outcomes', () => {
  it('across delivered, dead, deferred and misconfigured answers of both providers', async () => {
    const account = createServiceAccount();
    const oauth = await startGoogleOAuth({ account });
    const fcmFake = await startFakeFcm({ projectId: account.projectId, isAuthorized: (bearer) => oauth.isValid(bearer) });
    const distributor = await startDistributor();
    const vapid = createECDH('prime256v1');
    vapid.generateKeys();
    const captured = captureLog();
    const senders = createSenders(
      workerConfig({
        FCM_PROJECT_ID: account.projectId,
        FCM_CREDENTIALS_JSON: account.keyFile(oauth.url),
        FCM_ENDPOINT: fcmFake.url,
        PUSH_UP_ALLOW_PRIVATE: 'true',
        PUSH_UP_ALLOW_HTTP: 'true',
        PUSH_VAPID_PRIVATE_KEY: vapidPrivateKey(vapid),
        PUSH_VAPID_SUBJECT: 'mailto:ops@chat.example',
      }),
      captured.log,
      { unifiedPushDeadlineMs: 300, breaker: { floor: 1 } },
    );
    cleanups.push(async () => {
      await senders.close();
      await distributor.close();
      await fcmFake.close();
      await oauth.close();
    });

    const secrets: string[] = [];
    const outcomes: ProviderAnswer[] = [];
    const send = async (registration: RegistrationForSend) => {
      if (registration.transport === 'unifiedpush' && URL.canParse(registration.token)) secrets.push(new URL(registration.token).pathname);
      secrets.push(
        registration.token,
        ...[registration.p256dh, registration.auth].flatMap((k) =>
          k === null ? [] : [k.toString('base64url'), k.toString('base64'), k.toString('hex')],
        ),
      );
      outcomes.push(await senders[registration.transport].send(registration, 'high'));
    };

    await send(fcmRegistration(fakeFcmToken()));
    for (const answer of [
      fcmError('UNREGISTERED'),
      fcmError('INVALID_ARGUMENT', { aboutToken: true }),
      fcmError('SENDER_ID_MISMATCH'),
      fcmError('UNAVAILABLE'),
      fcmError('INVALID_ARGUMENT'),
      fcmError('SENDER_ID_MISMATCH'),
    ]) {
      fcmFake.script(answer);
      await send(fcmRegistration(fakeFcmToken()));
    }
    oauth.revokeAll();
    await send(fcmRegistration(fakeFcmToken()));
    const device = createDeviceKeys();
    await send(upRegistration(distributor.register(device), device));
    distributor.script({ status: 410 }, { status: 503 }, { hang: true });
    for (let i = 0; i < 3; i++) await send(upRegistration(distributor.register(device), device));
    await send(upRegistration(`${distributor.url}/up/unknown-SECRET-PATH`));
    await send(upRegistration('https://user:SECRET-PASSWORD@ntfy.example/up/x'));

    expect(new Set(outcomes.map((o) => o.kind))).toEqual(new Set(['delivered', 'dead', 'deferred', 'misconfigured']));
    const accessTokens = oauth.received.flatMap((r) => (r.issued === undefined ? [] : [r.issued]));
    expect(accessTokens.length).toBeGreaterThan(1);
    const everything = [...captured.lines, JSON.stringify(outcomes)].join('\n');
    for (const secret of [...secrets, ...accessTokens, 'SECRET-PATH', 'SECRET-PASSWORD', account.privateKeyPem.split('\n')[1] ?? '']) {
      expect(everything).not.toContain(secret);
    }
    expect(captured.lines.length).toBeGreaterThan(outcomes.length); // it did log every send
  });
});

describe('send: each wake judged by the outage detector', () => {
  async function upWorld() {
    const distributor = await startDistributor();
    const transports = createTransports(workerConfig({ PUSH_UP_ALLOW_PRIVATE: 'true', PUSH_UP_ALLOW_HTTP: 'true' }), captureLog().log);
    cleanups.push(async () => {
      await transports.close();
      await distributor.close();
    });
    const device = () => {
      const keys = createDeviceKeys();
      return upRegistration(distributor.register(keys), keys);
    };
    return { distributor, transports, device };
  }
  const t0 = Date.parse('2026-12-01T12:00:00Z');

  it('counts one endpoint failing on a healthy origin, and never a 429', async () => {
    const { distributor, transports, device } = await upWorld();
    const [good, bad] = [device(), device()];
    distributor.answerFor(bad.token, { status: 503 });
    expect(await transports.send(good, 'normal', t0)).toEqual({ kind: 'delivered', status: 201 });
    expect(await transports.send(bad, 'normal', t0 + 1)).toEqual({ kind: 'deferred', cause: 'failing', reason: 'UnifiedPush 503', counts: true });
    distributor.answerFor(bad.token, { status: 429, headers: { 'retry-after': '600' } });
    expect(await transports.send(bad, 'normal', t0 + 2)).toEqual({
      kind: 'deferred',
      cause: 'rate_limited',
      reason: 'UnifiedPush 429: rate limited',
      counts: false,
      until: t0 + 2 + 600_000,
    });
  });

  it('finds a whole origin down, counts only the failures before that, and holds its wakes back but for a probe', async () => {
    const { distributor, transports, device } = await upWorld();
    const devices = [device(), device(), device(), device(), device()];
    const origin = `unifiedpush ${new URL(distributor.url).origin}`;
    for (const [i, d] of devices.entries()) expect(await transports.send(d, 'normal', t0 + i)).toEqual({ kind: 'delivered', status: 201 });
    distributor.answerAll({ status: 503 });
    const t1 = t0 + 60_000;
    // Two of five recently active failing: their endpoints', as far as anyone can tell.
    expect(await transports.send(devices[0]!, 'normal', t1)).toMatchObject({ kind: 'deferred', cause: 'failing', counts: true });
    expect(await transports.send(devices[1]!, 'normal', t1 + 1)).toMatchObject({ kind: 'deferred', cause: 'failing', counts: true });
    // The third: three failing, more than half of the five: an outage.
    expect(await transports.send(devices[2]!, 'normal', t1 + 2)).toMatchObject({ cause: 'failing', counts: false, origin });
    const requests = distributor.received.length;
    expect(await transports.send(devices[3]!, 'normal', t1 + 3)).toEqual({
      kind: 'deferred',
      cause: 'outage',
      reason: 'unifiedpush outage: held back',
      counts: false,
      origin,
    });
    expect(distributor.received).toHaveLength(requests); // not even sent
    // The origin answers again: two probes of distinct devices delivered in a row end the outage,
    // the second admitted as soon as the first was delivered.
    distributor.answerAll(undefined);
    expect(await transports.send(devices[3]!, 'normal', t1 + 5_002)).toEqual({ kind: 'delivered', status: 201 });
    const ended: string[] = [];
    transports.onOutageEnd((key) => ended.push(key));
    expect(await transports.send(devices[4]!, 'normal', t1 + 5_100)).toEqual({ kind: 'delivered', status: 201 });
    expect(ended).toEqual([origin]);
    expect(await transports.send(devices[0]!, 'normal', t1 + 10_004)).toEqual({ kind: 'delivered', status: 201 });
  });

  it('never counts an FCM failure without an answer, nor the OAuth endpoint', async () => {
    const account = createServiceAccount();
    const oauth = await startGoogleOAuth({ account });
    const fcmFake = await startFakeFcm({ projectId: account.projectId, isAuthorized: (bearer) => oauth.isValid(bearer) });
    const transports = createTransports(
      workerConfig({ FCM_PROJECT_ID: account.projectId, FCM_CREDENTIALS_JSON: account.keyFile(oauth.url), FCM_ENDPOINT: fcmFake.url }),
      captureLog().log,
    );
    cleanups.push(async () => {
      await transports.close();
      await fcmFake.close();
      await oauth.close();
    });
    expect(await transports.send(fcmRegistration(fakeFcmToken()), 'high', t0)).toEqual({ kind: 'delivered', status: 200 });
    // FCM delivers to others: its 503 for this token counts.
    fcmFake.script(fcmError('UNAVAILABLE'));
    expect(await transports.send(fcmRegistration(fakeFcmToken()), 'high', t0 + 1)).toMatchObject({ cause: 'failing', counts: true });
    oauth.revokeAll();
    oauth.script({ status: 503 });
    expect(await transports.send(fcmRegistration(fakeFcmToken()), 'high', t0 + 2)).toMatchObject({
      reason: 'OAuth token endpoint answered 503',
      counts: false,
    });
    await fcmFake.close();
    expect(await transports.send(fcmRegistration(fakeFcmToken()), 'high', t0 + 3)).toMatchObject({ reason: 'FCM connection refused', counts: false });
  });
});

/**
 * Where the FCM bearer comes from (docs/design.md, Configuration and Wakes on the wire): google-auth-library, fed by the
 * service-account key or by Application Default Credentials — GKE's metadata server, or an
 * `external_account` file exchanged at Google's STS — each against a loopback stand-in that
 * checks what Google checks. The FCM stand-in accepts only the bearer the credential's own
 * endpoint issued. Also: tokens refreshed before they expire, one refresh per 401, and the
 * operator's view — the expiry gauge, the refresh-failure counter and its alert line.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createSenders, type Senders } from '../../../src/transports/index.js';
import { retryDelayMs } from '../../../src/transports/fcm-auth.js';
import { tokenExpiry, tokenRefreshFailures } from '../../../src/transports/metrics.js';
import { startFakeFcm, type FakeFcm } from '../../../devstack/stand-ins/fcm.js';
import { startGceMetadata } from '../../../devstack/stand-ins/gce-metadata.js';
import { createServiceAccount, startGoogleOAuth } from '../../../devstack/stand-ins/google-oauth.js';
import { startGoogleSts } from '../../../devstack/stand-ins/google-sts.js';
import { captureLog, eventually, fakeFcmToken, fcmRegistration, workerConfig, type CapturedLog } from './helpers.js';

const projectId = 'zippchat-test';
const account = createServiceAccount(projectId);
const googleServiceAccount = `push@${projectId}.iam.gserviceaccount.com`;
const provider = '//iam.googleapis.com/projects/123456789/locations/global/workloadIdentityPools/other-cloud/providers/cluster-oidc';

const cleanups: Array<() => Promise<void> | void> = [];
let dir: string;

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'fcm-credentials-'));
  // google-auth-library reads these itself: no gcloud login or real metadata server of this machine leaks in.
  vi.stubEnv('CLOUDSDK_CONFIG', path.join(dir, 'gcloud'));
  vi.stubEnv('GOOGLE_APPLICATION_CREDENTIALS', undefined);
  vi.stubEnv('GCE_METADATA_HOST', undefined);
  vi.stubEnv('METADATA_SERVER_DETECTION', undefined);
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
});
afterEach(async () => {
  vi.useRealTimers();
  vi.unstubAllEnvs();
  while (cleanups.length > 0) await cleanups.pop()?.();
});

async function fcmAccepting(isAuthorized: (bearer: string) => boolean): Promise<FakeFcm> {
  const fcm = await startFakeFcm({ projectId, isAuthorized });
  cleanups.push(() => fcm.close());
  return fcm;
}

function transportsFor(env: Record<string, string>, fcm: FakeFcm): { transports: Senders; captured: CapturedLog } {
  const captured = captureLog();
  const transports = createSenders(workerConfig({ FCM_PROJECT_ID: projectId, FCM_ENDPOINT: fcm.url, ...env }), captured.log);
  cleanups.push(() => transports.close());
  return { transports, captured };
}

const send = (transports: Senders) => transports.fcm.send(fcmRegistration(fakeFcmToken()), 'high');
const expirySeconds = async () => (await tokenExpiry.get()).values[0]?.value ?? 0;
const refreshFailures = async () => (await tokenRefreshFailures.get()).values[0]?.value ?? 0;
const alertLines = (captured: CapturedLog) =>
  captured.lines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.alert === 'fcm-token-refresh');

describe('the service-account key (FCM_CREDENTIALS_JSON_FILE)', () => {
  it("fetches the bearer from the key's token_uri, says when it expires, and logs no key or token", async () => {
    const oauth = await startGoogleOAuth({ account });
    cleanups.push(() => oauth.close());
    const fcm = await fcmAccepting((bearer) => oauth.isValid(bearer));
    const keyFile = path.join(dir, 'service-account.json');
    writeFileSync(keyFile, account.keyFile(oauth.url));
    const { transports, captured } = transportsFor({ FCM_CREDENTIALS_JSON_FILE: keyFile }, fcm);

    expect(await send(transports)).toEqual({ kind: 'delivered', status: 200 });

    expect(oauth.problems).toEqual([]);
    expect(oauth.received).toHaveLength(1);
    const bearer = fcm.received[0]?.bearer ?? '';
    expect(oauth.isValid(bearer)).toBe(true);
    expect(Math.abs((await expirySeconds()) - (Date.now() / 1000 + 3599))).toBeLessThan(60);
    const logged = captured.lines.join('\n');
    expect(logged).not.toContain(bearer);
    expect(logged).not.toContain(account.privateKeyPem.split('\n')[1]);
  });

  it('fetches a new token five minutes before the current one expires, not sooner, and moves the gauge', async () => {
    const oauth = await startGoogleOAuth({ account, expiresInSeconds: 3600 });
    cleanups.push(() => oauth.close());
    const fcm = await fcmAccepting((bearer) => oauth.isValid(bearer));
    const { transports } = transportsFor({ FCM_CREDENTIALS_JSON: account.keyFile(oauth.url) }, fcm);
    vi.useFakeTimers({ toFake: ['Date'] });
    const start = Date.now();

    await send(transports);
    const firstExpiry = await expirySeconds();
    vi.setSystemTime(start + 54 * 60_000);
    await send(transports);
    expect(oauth.received).toHaveLength(1);
    vi.setSystemTime(start + 56 * 60_000);
    await send(transports);

    expect(oauth.received).toHaveLength(2);
    expect(fcm.received.map((r) => r.answered)).toEqual([200, 200, 200]);
    expect(fcm.received[2]?.bearer).not.toBe(fcm.received[1]?.bearer);
    expect((await expirySeconds()) - firstExpiry).toBeCloseTo(56 * 60, -1);
  });

  it('while refreshes fail, sends go on with the current token until shortly before it expires, and each failure alerts', async () => {
    const oauth = await startGoogleOAuth({ account, expiresInSeconds: 3600 });
    cleanups.push(() => oauth.close());
    const fcm = await fcmAccepting((bearer) => oauth.isValid(bearer));
    const { transports, captured } = transportsFor({ FCM_CREDENTIALS_JSON: account.keyFile(oauth.url) }, fcm);
    vi.useFakeTimers({ toFake: ['Date'] });
    const start = Date.now();
    await send(transports);
    const failuresBefore = await refreshFailures();

    oauth.answerAll({ status: 503 }); // the token endpoint is down from now on
    vi.setSystemTime(start + 56 * 60_000);
    expect(await send(transports)).toEqual({ kind: 'delivered', status: 200 });
    vi.setSystemTime(start + 60 * 60_000 - 10_000);
    expect(await send(transports)).toEqual({
      kind: 'deferred',
      cause: 'failing',
      reason: 'OAuth token endpoint answered 503',
      blame: 'token-endpoint',
    });

    expect(fcm.received.map((r) => r.bearer)).toEqual([fcm.received[0]?.bearer, fcm.received[0]?.bearer]);
    expect((await refreshFailures()) - failuresBefore).toBe(2);
    const alerts = alertLines(captured);
    expect(alerts).toHaveLength(2);
    expect(alerts[0]).toMatchObject({ source: 'key', status: 503, tokenExpiresAt: new Date(start + 3_600_000).toISOString() });
    expect(alerts[0]?.msg).toContain('the current token holds until');
  });

  it('a refused refresh is an alert line of its own and a count, naming the OAuth error but nothing of the request', async () => {
    const oauth = await startGoogleOAuth({ account });
    cleanups.push(() => oauth.close());
    const fcm = await fcmAccepting((bearer) => oauth.isValid(bearer));
    const { transports, captured } = transportsFor({ FCM_CREDENTIALS_JSON: account.keyFile(oauth.url) }, fcm);
    const failuresBefore = await refreshFailures();
    oauth.script({ status: 400, body: { error: 'invalid_grant', error_description: 'Invalid JWT Signature.' } });

    expect(await send(transports)).toEqual({
      kind: 'misconfigured',
      reason: 'FCM credentials refused: token endpoint answered 400 invalid_grant',
      noToken: true,
    });

    expect((await refreshFailures()) - failuresBefore).toBe(1);
    expect(alertLines(captured)).toEqual([
      expect.objectContaining({ level: 50, source: 'key', status: 400, reason: 'token endpoint answered 400 invalid_grant' }),
    ]);
    expect(captured.lines.join('\n')).not.toMatch(/assertion|eyJ|Invalid JWT Signature/);
    expect(fcm.received).toEqual([]);
  });
});

describe('Application Default Credentials: the GKE metadata server (Workload Identity)', () => {
  async function gke() {
    const metadata = await startGceMetadata({ serviceAccount: googleServiceAccount });
    cleanups.push(() => metadata.close());
    vi.stubEnv('GCE_METADATA_HOST', metadata.host);
    const fcm = await fcmAccepting((bearer) => metadata.isValid(bearer));
    return { metadata, fcm, ...transportsFor({ FCM_USE_ADC: 'true' }, fcm) };
  }

  it('sends with the token the metadata server issues for firebase.messaging, asked with Metadata-Flavor: Google', async () => {
    const { metadata, fcm, transports } = await gke();

    expect(await send(transports)).toEqual({ kind: 'delivered', status: 200 });
    expect(await send(transports)).toEqual({ kind: 'delivered', status: 200 });

    expect(metadata.problems).toEqual([]);
    expect(metadata.tokens).toHaveLength(1);
    expect(metadata.tokens[0]?.scopes).toContain('https://www.googleapis.com/auth/firebase.messaging');
    expect(fcm.received.map((r) => r.bearer)).toEqual([metadata.tokens[0]?.issued, metadata.tokens[0]?.issued]);
    // The stand-in is as strict as GKE: no header, no token.
    const bare = await fetch(`http://${metadata.host}/computeMetadata/v1/instance/service-accounts/default/token`);
    expect(bare.status).toBe(403);
    expect(bare.headers.get('metadata-flavor')).toBe('Google');
  });

  it('a 401 from FCM leads to exactly one new token, and the wake goes out with it', async () => {
    const { metadata, fcm, transports } = await gke();
    await send(transports);
    metadata.revokeAll();

    expect(await send(transports)).toEqual({ kind: 'delivered', status: 200 });

    expect(metadata.tokens).toHaveLength(2);
    expect(fcm.received.map((r) => r.answered)).toEqual([200, 401, 200]);
    expect(fcm.received[2]?.bearer).toBe(metadata.tokens[1]?.issued);
  });

  it('keepFresh fetches a token at start, before any wake, and the gauge says when it expires', async () => {
    const { metadata, transports } = await gke();
    transports.fcmTokens?.keepFresh();
    await eventually(() => metadata.tokens.length === 1);
    await vi.waitFor(async () => expect(Math.abs((await expirySeconds()) - (Date.now() / 1000 + 3599))).toBeLessThan(60));
  });

  it('keepFresh renews the token five minutes before it expires, with no wake sent, and the gauge moves on', async () => {
    const { metadata, transports } = await gke();
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    transports.fcmTokens?.keepFresh();
    await vi.waitFor(() => expect(metadata.tokens).toHaveLength(1));
    const firstExpiry = await expirySeconds();

    await vi.advanceTimersByTimeAsync(54 * 60_000);
    expect(metadata.tokens).toHaveLength(1);
    // Just past the renewal (at 54:59), not as far as the fetch's own 10 s deadline: the stand-in answers in real time.
    await vi.advanceTimersByTimeAsync(60_000);
    await vi.waitFor(() => expect(metadata.tokens).toHaveLength(2));

    await vi.waitFor(async () => expect((await expirySeconds()) - firstExpiry).toBeCloseTo(55 * 60, -2));
    transports.fcmTokens?.close();
  });
});

describe('Application Default Credentials: an external_account file (workload identity federation)', () => {
  async function federation(impersonate: boolean) {
    let subjectToken = `eyJ.other-cloud-oidc.${Date.now()}`;
    const sts = await startGoogleSts({ audience: provider, subjectToken: () => subjectToken });
    cleanups.push(() => sts.close());
    const subjectTokenFile = path.join(dir, 'token');
    writeFileSync(subjectTokenFile, subjectToken);
    const credentialFile = path.join(dir, 'credential-config.json');
    writeFileSync(
      credentialFile,
      JSON.stringify(sts.credentialConfig({ subjectTokenFile, impersonate: impersonate ? googleServiceAccount : undefined })),
    );
    vi.stubEnv('GOOGLE_APPLICATION_CREDENTIALS', credentialFile);
    const refused = new Set<string>();
    const fcm = await fcmAccepting((bearer) => !refused.has(bearer) && (impersonate ? sts.isImpersonated(bearer) : sts.isFederated(bearer)));
    const revoke = (bearer: string) => void refused.add(bearer);
    const rotate = () => {
      subjectToken = `eyJ.other-cloud-oidc.rotated.${Date.now()}`;
      writeFileSync(subjectTokenFile, subjectToken);
    };
    return { sts, fcm, rotate, revoke, ...transportsFor({ FCM_USE_ADC: 'true', GOOGLE_APPLICATION_CREDENTIALS: credentialFile }, fcm) };
  }

  it("exchanges the other cloud's token at the STS and sends with the federated token", async () => {
    const { sts, fcm, transports, captured } = await federation(false);

    expect(await send(transports)).toEqual({ kind: 'delivered', status: 200 });

    expect(sts.problems).toEqual([]);
    expect(sts.exchanges).toHaveLength(1);
    expect(sts.exchanges[0]?.scope).toBe('https://www.googleapis.com/auth/firebase.messaging');
    expect(fcm.received[0]?.bearer).toBe(sts.exchanges[0]?.issued);
    expect(captured.lines.join('\n')).not.toContain(sts.exchanges[0]?.subjectToken);
  });

  it('impersonates the service account with the federated token, and rereads the rotated subject token after a 401', async () => {
    const { sts, fcm, rotate, revoke, transports } = await federation(true);
    expect(await send(transports)).toEqual({ kind: 'delivered', status: 200 });
    expect(sts.exchanges[0]?.scope).toBe('https://www.googleapis.com/auth/cloud-platform'); // what generateAccessToken requires
    expect(fcm.received[0]?.bearer).toBe(sts.impersonations[0]);

    rotate(); // the kubelet replaced the projected token file
    revoke(sts.impersonations[0] ?? '');
    expect(await send(transports)).toEqual({ kind: 'delivered', status: 200 });

    expect(sts.problems).toEqual([]);
    expect(sts.exchanges.map((e) => e.issued !== undefined)).toEqual([true, true]);
    expect(sts.exchanges[1]?.subjectToken).toContain('rotated');
    expect(sts.impersonations).toHaveLength(2);
    expect(fcm.received.map((r) => r.answered)).toEqual([200, 401, 200]);
    expect(fcm.received[2]?.bearer).toBe(sts.impersonations[1]);
  });
});

describe('Application Default Credentials found nowhere', () => {
  it('is misconfigured, with an alert, not a failing send', async () => {
    vi.stubEnv('METADATA_SERVER_DETECTION', 'none');
    const fcm = await fcmAccepting(() => true);
    const { transports, captured } = transportsFor({ FCM_USE_ADC: 'true' }, fcm);

    const outcome = await send(transports);

    expect(outcome).toMatchObject({ kind: 'misconfigured', reason: expect.stringContaining('no Application Default Credentials found') as string });
    expect(alertLines(captured)).toEqual([expect.objectContaining({ source: 'adc' })]);
    expect(fcm.received).toEqual([]);
  });
});

describe('a failed token fetch is tried again', () => {
  it('after 1 s, doubling, at most every 30 s', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 50].map(retryDelayMs)).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000]);
  });
});

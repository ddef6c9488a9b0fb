/**
 * The built worker's FCM credentials as an operator meets them: at start, before any wake,
 * it fetches a token — from GKE's metadata server without any key, or from the key's token
 * endpoint — and /metrics says when that token expires; a credential Google refuses is an
 * alert line and a count within seconds, while the worker runs on for UnifiedPush. Given two
 * credential sources it does not start. Credentials that are not there yet when the worker
 * starts — a metadata server that answers late, a credential file mounted late — are found
 * when they come, and an FCM wake held back meanwhile goes out then.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { waitFor } from '../../devstack/daemons.js';
import { freePort } from '../../devstack/ports.js';
import { startFakeFcm } from '../../devstack/stand-ins/fcm.js';
import { startGceMetadata, type FakeGceMetadata } from '../../devstack/stand-ins/gce-metadata.js';
import { createServiceAccount, startGoogleOAuth } from '../../devstack/stand-ins/google-oauth.js';
import { startGoogleSts } from '../../devstack/stand-ins/google-sts.js';
import { signalPending } from '../../temporal/registration-workflows.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { hostFixtures, nextId } from '../support/host-fixtures.js';
import { serviceEnv, startProcess, waitReady, type RunningProcess } from '../support/processes.js';

const projectId = 'zippchat-test';
let db: TestDatabase;
let home: string;
beforeAll(async () => {
  db = await freshDatabase();
  home = mkdtempSync(path.join(tmpdir(), 'fcm-worker-home-'));
});
afterAll(async () => {
  await db.drop();
  rmSync(home, { recursive: true, force: true });
});

async function worker(extra: Record<string, string>): Promise<{ process: RunningProcess; url: string; taskQueue: string }> {
  const port = await freePort();
  const taskQueue = `fcm-credentials-${port}`;
  // HOME without a gcloud login: Application Default Credentials come only from what the test gives.
  const env = serviceEnv(db.url, { HOME: home, WORKER_METRICS_PORT: String(port), TEMPORAL_TASK_QUEUE: taskQueue, ...extra });
  const process = startProcess('worker', env);
  const url = `http://127.0.0.1:${port}`;
  await waitReady(url, process);
  return { process, url, taskQueue };
}

/** One sample of an unlabelled metric from /metrics. */
async function sample(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? Number.NaN : Number(line.slice(name.length + 1));
}

/** `wait`, failing with the worker's last lines: what it did instead is the cause to read. */
async function showingWorker(process: RunningProcess, wait: Promise<unknown>): Promise<void> {
  await wait.catch((error: unknown) => {
    throw new Error(`${String(error)}; the worker's last lines:\n${process.output().split('\n').slice(-40).join('\n')}`);
  });
}

describe('the worker process and its FCM credentials', () => {
  it('on GKE, with no key anywhere: a token from the metadata server at start, and its expiry on /metrics', async () => {
    const metadata = await startGceMetadata({ serviceAccount: `push@${projectId}.iam.gserviceaccount.com` });
    const { process, url } = await worker({ FCM_PROJECT_ID: projectId, FCM_USE_ADC: 'true', GCE_METADATA_HOST: metadata.host });
    try {
      await waitFor('the token expiry on /metrics', async () => (await sample(url, 'push_fcm_token_expiry_timestamp_seconds')) > 0, 30_000);
      const expiry = await sample(url, 'push_fcm_token_expiry_timestamp_seconds');
      expect(Math.abs(expiry - (Date.now() / 1000 + 3599))).toBeLessThan(120);
      expect(metadata.tokens).toHaveLength(1);
      expect(metadata.problems).toEqual([]);
      expect(await sample(url, 'push_fcm_token_refresh_failures_total')).toBe(0);
      expect(process.output()).not.toContain(metadata.tokens[0]!.issued);
    } finally {
      expect(await process.stop(), process.output()).toBe(0);
      await metadata.close();
    }
  });

  it('a key Google refuses: an alert line and a count at start, nothing of the key logged, UnifiedPush still served', async () => {
    const account = createServiceAccount(projectId);
    const oauth = await startGoogleOAuth({ account });
    oauth.answerAll({ status: 400, body: { error: 'invalid_grant', error_description: 'Invalid JWT Signature.' } });
    const { process, url } = await worker({ FCM_PROJECT_ID: projectId, FCM_CREDENTIALS_JSON: account.keyFile(oauth.url) });
    try {
      await waitFor('a failed refresh on /metrics', async () => (await sample(url, 'push_fcm_token_refresh_failures_total')) >= 1, 30_000);
      // One line per failed fetch: the retry a second later may have failed too on a slow machine.
      const alerts = process
        .output()
        .split('\n')
        .filter((line) => line.includes('"alert":"fcm-token-refresh"'));
      expect(alerts.length).toBeGreaterThanOrEqual(1);
      for (const alert of alerts)
        expect(JSON.parse(alert)).toMatchObject({
          level: 'error',
          source: 'key',
          status: 400,
          reason: 'token endpoint answered 400 invalid_grant',
        });
      expect(process.output()).not.toContain(account.privateKeyPem.split('\n')[1]);
      expect(process.output()).not.toContain('Invalid JWT Signature');
      expect((await fetch(`${url}/readyz`)).status).toBe(200);
    } finally {
      expect(await process.stop(), process.output()).toBe(0);
      await oauth.close();
    }
  });

  it('a metadata server that answers only after the worker started is found, and the FCM wake held back meanwhile goes out', async () => {
    const metadataPort = await freePort();
    let metadata: FakeGceMetadata | undefined;
    const fcm = await startFakeFcm({ projectId, isAuthorized: (bearer) => metadata?.isValid(bearer) ?? false });
    const { process, url, taskQueue } = await worker({
      FCM_PROJECT_ID: projectId,
      FCM_USE_ADC: 'true',
      GCE_METADATA_HOST: `127.0.0.1:${metadataPort}`,
      FCM_ENDPOINT: fcm.url,
    });
    const connection = await Connection.connect({ address: inject('temporalAddress') });
    try {
      await waitFor('a failed token fetch', async () => (await sample(url, 'push_fcm_token_refresh_failures_total')) >= 1, 30_000);
      // A phone on FCM gets a DM while no credential answers: its wake is held back, not lost.
      const device = { userId: await hostFixtures(db.pool).user(), deviceId: 'late-metadata-phone' };
      await db.pool.query(sql.unsafe`
        WITH r AS (
          INSERT INTO push_registrations (user_id, device_id, transport, token)
          VALUES (${device.userId}, ${device.deviceId}, 'fcm', ${`fcm-token-${device.userId}`}) RETURNING id)
        INSERT INTO push_pending (registration_id, channel_id, message_count, first_message_id, first_at, last_message_id, is_dm)
        SELECT r.id, ${nextId()}, 1, ${nextId()}, now(), 1, true FROM r`);
      await signalPending(new Client({ connection }), taskQueue, device, 'fcm');
      const misconfigured = /^push_wakes_total\{[^}]*outcome="misconfigured"[^}]*\} ([1-9])/m;
      await showingWorker(
        process,
        waitFor('the wake held back', async () => misconfigured.test(await (await fetch(`${url}/metrics`)).text()), 60_000),
      );
      expect(fcm.received).toEqual([]);

      // GKE's metadata server comes up where the worker looks: found on a later try, and the wake goes out.
      metadata = await startGceMetadata({ serviceAccount: `push@${projectId}.iam.gserviceaccount.com`, port: metadataPort });
      await waitFor('the token expiry on /metrics', async () => (await sample(url, 'push_fcm_token_expiry_timestamp_seconds')) > 0, 60_000);
      await showingWorker(
        process,
        waitFor('the held-back wake', async () => fcm.received.some((r) => r.answered === 200), 60_000),
      );
      expect(fcm.received.find((r) => r.answered === 200)?.bearer).toBe(metadata.tokens[0]?.issued);
      expect(metadata.problems).toEqual([]);
      const alerts = process
        .output()
        .split('\n')
        .filter((line) => line.includes('"alert":"fcm-token-refresh"'));
      expect(alerts.length).toBeGreaterThanOrEqual(1);
      expect(JSON.parse(alerts[0]!)).toMatchObject({
        level: 'error',
        source: 'adc',
        reason: expect.stringContaining('no Application Default Credentials'),
      });
    } finally {
      expect(await process.stop(), process.output()).toBe(0);
      await connection.close();
      await metadata?.close();
      await fcm.close();
    }
  });

  it('a credential file mounted only after the worker started is read when it comes', async () => {
    const provider = '//iam.googleapis.com/projects/123456789/locations/global/workloadIdentityPools/other-cloud/providers/cluster-oidc';
    const subjectToken = `eyJ.other-cloud-oidc.${Date.now()}`;
    const sts = await startGoogleSts({ audience: provider, subjectToken: () => subjectToken });
    const mount = path.join(home, `late-${Date.now()}`);
    const credentialFile = path.join(mount, 'credential-config.json');
    const { process, url } = await worker({ FCM_PROJECT_ID: projectId, FCM_USE_ADC: 'true', GOOGLE_APPLICATION_CREDENTIALS: credentialFile });
    try {
      await waitFor('a failed token fetch', async () => (await sample(url, 'push_fcm_token_refresh_failures_total')) >= 1, 30_000);
      expect(process.output()).toContain('the credential file named by GOOGLE_APPLICATION_CREDENTIALS cannot be read');

      // The kubelet mounts the ConfigMap and the projected token late.
      mkdirSync(mount);
      const subjectTokenFile = path.join(mount, 'token');
      writeFileSync(subjectTokenFile, subjectToken);
      writeFileSync(credentialFile, JSON.stringify(sts.credentialConfig({ subjectTokenFile })));
      await waitFor('the token expiry on /metrics', async () => (await sample(url, 'push_fcm_token_expiry_timestamp_seconds')) > 0, 60_000);
      expect(sts.problems).toEqual([]);
      expect(sts.exchanges.filter((e) => e.issued !== undefined)).toHaveLength(1);
      expect(process.output()).not.toContain(subjectToken);
    } finally {
      expect(await process.stop(), process.output()).toBe(0);
      await sts.close();
    }
  });

  it('does not start with two credential sources, and says so in one line', async () => {
    const account = createServiceAccount(projectId);
    const env = serviceEnv(db.url, {
      HOME: home,
      WORKER_METRICS_PORT: String(await freePort()),
      FCM_PROJECT_ID: projectId,
      FCM_CREDENTIALS_JSON: account.keyFile('https://oauth2.googleapis.com/token'),
      FCM_USE_ADC: 'true',
    });
    const process = startProcess('worker', env);
    const code = await new Promise<number | null>((resolve) => process.child.once('exit', resolve));
    expect(code).toBe(1);
    expect(process.output().trim()).toBe(
      'config: FCM_USE_ADC must not be true together with FCM_CREDENTIALS_JSON: the worker takes one FCM credential source',
    );
  });
});

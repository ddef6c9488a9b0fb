/**
 * The built worker's FCM credentials as an operator meets them: at start, before any wake,
 * it fetches a token — from GKE's metadata server without any key, or from the key's token
 * endpoint — and /metrics says when that token expires; a credential Google refuses is an
 * alert line and a count within seconds, while the worker runs on for UnifiedPush. Given two
 * credential sources it does not start.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../devstack/daemons.js';
import { freePort } from '../../devstack/ports.js';
import { startGceMetadata } from '../../devstack/stand-ins/gce-metadata.js';
import { createServiceAccount, startGoogleOAuth } from '../../devstack/stand-ins/google-oauth.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
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

async function worker(extra: Record<string, string>): Promise<{ process: RunningProcess; url: string }> {
  const port = await freePort();
  // HOME without a gcloud login: Application Default Credentials come only from what the test gives.
  const env = serviceEnv(db.url, { HOME: home, WORKER_METRICS_PORT: String(port), TEMPORAL_TASK_QUEUE: `fcm-credentials-${port}`, ...extra });
  const process = startProcess('worker', env);
  const url = `http://127.0.0.1:${port}`;
  await waitReady(url, process);
  return { process, url };
}

/** One sample of an unlabelled metric from /metrics. */
async function sample(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? Number.NaN : Number(line.slice(name.length + 1));
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
      const alerts = process
        .output()
        .split('\n')
        .filter((line) => line.includes('"alert":"fcm-token-refresh"'));
      expect(alerts).toHaveLength(1);
      expect(JSON.parse(alerts[0]!)).toMatchObject({ level: 'error', source: 'key', status: 400, reason: 'token endpoint answered 400 invalid_grant' });
      expect(process.output()).not.toContain(account.privateKeyPem.split('\n')[1]);
      expect(process.output()).not.toContain('Invalid JWT Signature');
      expect((await fetch(`${url}/readyz`)).status).toBe(200);
    } finally {
      expect(await process.stop(), process.output()).toBe(0);
      await oauth.close();
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

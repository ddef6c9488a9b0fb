/**
 * On the real Temporal server (PostgreSQL persistence, SQL visibility, frontend on
 * TLS with client certificates required): the built api, worker and bridge connect with the
 * settings of docs/design.md, Production connections; UnifiedPush and FCM phones get real wakes and drain; the
 * maintenance Schedule is created by the worker and its runs complete; and a process without
 * an accepted client certificate is refused and says why in one line.
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { jetstream } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { waitFor } from '../../devstack/daemons.js';
import { createCertificateAuthority } from '../../devstack/pki.js';
import { createServiceAccount } from '../../devstack/stand-ins/google-oauth.js';
import { startLocalFcm, type LocalFcm } from '../../devstack/stand-ins/local-fcm.js';
import { parseSimulatorArgs } from '../../simulator/cli-options.js';
import { runSimulator } from '../../simulator/run.js';
import { temporalConnectionOptions } from '../../temporal/connection.js';
import { maintenanceScheduleId } from '../../temporal/names.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { hostFixtures, nextId, type HostFixtures } from '../support/host-fixtures.js';
import { signDeviceToken, testJwtSecret } from '../support/jwt.js';
import { freePort } from '../../devstack/ports.js';
import { serviceEnv, startProcess, waitReady, type RunningProcess } from '../support/processes.js';

let db: TestDatabase;
let host: HostFixtures;
let fcm: LocalFcm;
let nc: NatsConnection;
let temporal: Client;
let env: Record<string, string>;
const running: Array<{ name: string; process: RunningProcess; url: string }> = [];

beforeAll(async () => {
  db = await freshDatabase();
  host = hostFixtures(db.pool);
  const account = createServiceAccount('zippchat-cluster');
  fcm = await startLocalFcm({ account });
  const [api, worker, bridge] = [await freePort(), await freePort(), await freePort()];
  env = serviceEnv(db.url, {
    PORT: String(api),
    WORKER_METRICS_PORT: String(worker),
    BRIDGE_METRICS_PORT: String(bridge),
    TEMPORAL_TASK_QUEUE: `cluster-${randomBytes(3).toString('hex')}`,
    FCM_PROJECT_ID: account.projectId,
    FCM_CREDENTIALS_JSON: account.keyFile(fcm.tokenUrl),
    FCM_ENDPOINT: fcm.url,
    PUSH_UP_ALLOW_PRIVATE: 'true',
    PUSH_UP_ALLOW_HTTP: 'true',
  });
  expect(env.TEMPORAL_TLS_CERT_FILE, 'the cluster tier runs the real server with mTLS').toBeDefined();
  for (const [name, port] of [
    ['api', api],
    ['worker', worker],
    ['bridge', bridge],
  ] as const) {
    running.push({ name, process: startProcess(name, env), url: `http://127.0.0.1:${port}` });
  }
  for (const { process, url } of running) await waitReady(url, process, 90_000);
  nc = await connect({ servers: inject('natsUrl') });
  const settings = loadConfig('admin', env).temporal;
  temporal = new Client({ connection: await Connection.connect(temporalConnectionOptions(settings)) });
});

afterAll(async () => {
  for (const { name, process } of running) expect(await process.stop(), `${name}:\n${process.output()}`).toBe(0);
  await nc?.close();
  await temporal?.connection.close();
  await fcm?.close();
  await db?.drop();
});

/** A DM to a new reader; `say()` publishes a message in it as the chat server does. */
async function conversation() {
  const [author, reader] = await host.users(2);
  const dm = await host.dm([author!, reader!]);
  const say = async () => {
    const event = { id: nextId(), channel_id: dm, author_id: author!, created_at: new Date().toISOString() };
    await jetstream(nc).publish(`channel.${dm}.MESSAGE_CREATE`, JSON.stringify(event));
  };
  return { reader: reader!, dm, say };
}

async function phone(reader: string, deviceId: string, extra: string[]) {
  await host.session(reader, deviceId);
  const jwt = await signDeviceToken({ userId: reader, deviceId, secret: testJwtSecret });
  return parseSimulatorArgs(['--api', running[0]!.url, '--token', jwt, '--wakes', '1', '--timeout', '60', '--json', ...extra]);
}

describe('the service on the real Temporal server with mTLS', () => {
  it.each([
    ['UnifiedPush', []],
    ['FCM', ['--transport', 'fcm', '--fcm-stand-in', 'FCM']],
  ])('a %s phone registers, is woken for a DM and drains it', async (_, extra) => {
    const { reader, dm, say } = await conversation();
    const lines: string[] = [];
    const args = extra.map((a) => (a === 'FCM' ? fcm.url : a));
    const summary = await runSimulator(await phone(reader, `phone-${nextId()}`, args), { out: (l) => void lines.push(l), onRegistered: () => say() });
    expect(summary, lines.join('\n')).toEqual({ wakes: 1, problems: 0, timedOut: false });
    const drained = lines.map((l) => JSON.parse(l) as { event: string; items?: Array<{ channel_id: string }> }).find((e) => e.event === 'drained');
    expect(drained?.items).toEqual([expect.objectContaining({ channel_id: dm, is_dm: true, message_count: 1 })]);
  });

  it('the worker created the maintenance Schedule there, and a run of it completes', async () => {
    const schedule = temporal.schedule.getHandle(maintenanceScheduleId);
    expect((await schedule.describe()).action).toMatchObject({ workflowType: 'maintenanceWorkflow' });
    await schedule.trigger();
    const completed = await waitFor(
      'a completed maintenance run',
      async () => {
        for await (const run of temporal.workflow.list({ query: `WorkflowType = 'maintenanceWorkflow' AND ExecutionStatus = 'Completed'` }))
          return run;
        return undefined;
      },
      60_000,
    );
    expect(completed.type).toBe('maintenanceWorkflow');
  });

  it('refuses a worker without a client certificate, or with one it does not accept, and the worker says why in one line', async () => {
    const { TEMPORAL_TLS_CERT_FILE: _c, TEMPORAL_TLS_KEY_FILE: _k, ...withoutCertificate } = env;
    const other = await (await createCertificateAuthority(`${inject('stackDir')}/other-ca`, 'other')).issue('intruder', { usage: 'client' });
    const tlsDir = path.dirname(env.TEMPORAL_TLS_CERT_FILE!);
    const cases = [
      [
        'no client certificate',
        withoutCertificate,
        'certificate required (it requires a client certificate: TEMPORAL_TLS_CERT_FILE and TEMPORAL_TLS_KEY_FILE)',
      ],
      [
        'a certificate from another CA',
        { ...env, TEMPORAL_TLS_CERT_FILE: other.certFile, TEMPORAL_TLS_KEY_FILE: other.keyFile },
        'unknown ca (it does not trust the CA of our client certificate: TEMPORAL_TLS_CERT_FILE and TEMPORAL_TLS_KEY_FILE)',
      ],
      [
        // The frontend's own certificate: our CA's, but made for servers, not clients.
        'a certificate of our CA not made for clients',
        { ...env, TEMPORAL_TLS_CERT_FILE: path.join(tlsDir, 'frontend.pem'), TEMPORAL_TLS_KEY_FILE: path.join(tlsDir, 'frontend-key.pem') },
        'bad certificate (it does not accept our client certificate: TEMPORAL_TLS_CERT_FILE and TEMPORAL_TLS_KEY_FILE)',
      ],
    ] as const;
    for (const [what, variables, reason] of cases) {
      const worker = startProcess('worker', { ...variables, WORKER_METRICS_PORT: String(await freePort()) });
      const code = await new Promise((resolve) => {
        worker.child.once('exit', resolve);
        setTimeout(() => resolve('still running after 60 s'), 60_000).unref();
      });
      expect(code, `${what}: ${worker.output()}`).toBe(1);
      expect(worker.output(), what).toBe(`worker: TLS handshake with the Temporal frontend refused by the peer: alert ${reason}\n`);
      await worker.stop();
    }
  });

  it('an api without a client certificate is not ready, and its log says why', async () => {
    const { TEMPORAL_TLS_CERT_FILE: _c, TEMPORAL_TLS_KEY_FILE: _k, ...withoutCertificate } = env;
    const port = await freePort();
    const api = startProcess('api', { ...withoutCertificate, PORT: String(port) });
    try {
      const url = `http://127.0.0.1:${port}`;
      await waitFor('the api to answer /healthz', async () => (await fetch(`${url}/healthz`).catch(() => undefined))?.status === 200, 30_000);
      const readiness = await fetch(`${url}/readyz`);
      expect(readiness.status).toBe(503);
      expect(await readiness.json()).toEqual({ status: 'not_ready', checks: { postgres: 'ok', temporal: 'failing' } });
      await waitFor('the reason in the log', async () => api.output().includes('"msg":"not ready"'), 10_000);
      const line = JSON.parse(
        api
          .output()
          .split('\n')
          .find((l) => l.includes('"msg":"not ready"'))!,
      ) as { check: string; reason: string };
      expect(line).toMatchObject({
        check: 'temporal',
        reason:
          'TLS handshake with the Temporal frontend refused by the peer: alert certificate required (it requires a client certificate: TEMPORAL_TLS_CERT_FILE and TEMPORAL_TLS_KEY_FILE)',
      });
    } finally {
      expect(await api.stop()).toBe(0);
    }
  });
});

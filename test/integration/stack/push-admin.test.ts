/**
 * The operator CLI against a running instance: a device's report (registration without any
 * secret, pending rows, sessions, workflow status and live `state`, Web UI link), counts by
 * transport, and pruning one registration the way the api's DELETE does.
 */
import { sql } from 'slonik';
import { inject } from 'vitest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { waitFor } from '../../../devstack/daemons.js';
import { loadConfig } from '../../../src/config/index.js';
import { inspectDevice } from '../../../src/admin/device-report.js';
import { formatDeviceReport } from '../../../src/admin/format.js';
import { pruneRegistration } from '../../../src/admin/prune-registration.js';
import { countRegistrations } from '../../../src/admin/registration-counts.js';
import { runAdmin } from '../../../src/admin/admin-cli.js';
import { createDeviceKeys, startDistributor, type LocalDistributor } from '../../../simulator/distributor.js';
import { registrationWorkflowId } from '../../../temporal/names.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { hostFixtures, nextId, type HostFixtures } from '../../support/host-fixtures.js';
import { signDeviceToken, testJwtSecret } from '../../support/jwt.js';
import { runCli } from './cli.js';
import { productHarness, type ProductHarness } from './harness.js';
import '../../support/provided.js';
import { jetstream } from '@nats-io/jetstream';

let db: TestDatabase;
let h: ProductHarness;
let host: HostFixtures;
let distributor: LocalDistributor;

beforeAll(async () => {
  db = await freshDatabase();
  h = await productHarness(db);
  host = hostFixtures(db.pool);
  distributor = await startDistributor();
});
afterAll(async () => {
  await distributor?.close();
  await h?.close();
  await db?.drop();
});

const uiUrl = 'http://ui.example:8233';
const deps = () => ({
  pool: db.pool,
  temporal: h.client,
  namespace: 'default',
  uiUrl,
  policy: loadConfig('admin', { DATABASE_URL: db.url }).wakePolicy,
});
const cliEnv = () => ({ DATABASE_URL: db.url, TEMPORAL_ADDRESS: inject('temporalAddress'), TEMPORAL_UI_URL: uiUrl });

/** A UnifiedPush phone with keys and a live session, woken once for a DM it has not drained. */
async function wokenPhone() {
  const [author, reader] = await host.users(2);
  const dm = await host.dm([author!, reader!]);
  const deviceId = `phone-${nextId()}`;
  const keys = createDeviceKeys();
  const endpoint = distributor.register(keys);
  const token = await signDeviceToken({ userId: reader!, deviceId, secret: testJwtSecret });
  const body = { transport: 'unifiedpush', token: endpoint, p256dh: keys.p256dh.toString('base64url'), auth: keys.auth.toString('base64url') };
  await db.pool.query(
    sql.unsafe`INSERT INTO refresh_tokens (user_id, device_id, expires_at) VALUES (${reader!}, ${deviceId}, now() + interval '1 day')`,
  );
  expect((await h.api.request('PUT', '/api/push/registration', { token, body })).status).toBe(200);
  const event = { id: nextId(), channel_id: dm, author_id: author!, created_at: new Date().toISOString() };
  await jetstream(h.nc).publish(`${h.subjectPrefix}channel.${dm}.MESSAGE_CREATE`, JSON.stringify(event));
  await waitFor('the wake', async () => distributor.received.some((m) => m.endpoint === endpoint), 30_000);
  return { userId: reader!, deviceId, dm, endpoint, keys, token };
}

describe('push-admin device', () => {
  it('reports registration, pending rows, sessions and the live workflow state — and no secret', async () => {
    const phone = await wokenPhone();
    // The belief settles at the workflow's next look: the registration's start, owed in the
    // outbox, may reach the workflow after the DM's signal woke the phone, and asks for one.
    await waitFor(
      'the workflow to believe the wake outstanding',
      async () => {
        const { workflow } = await inspectDevice(deps(), phone.userId, phone.deviceId);
        return workflow.status === 'RUNNING' && workflow.state?.outstanding === true;
      },
      30_000,
    );
    const report = await inspectDevice(deps(), phone.userId, phone.deviceId);
    expect(report.registration).toMatchObject({ transport: 'unifiedpush', encrypted: true, wake_outstanding: true, failures: 0 });
    expect(report.pending).toEqual([expect.objectContaining({ channel_id: phone.dm, is_dm: true, message_count: 1 })]);
    expect(report.liveSessions).toBe(1);
    expect(report.workflow).toMatchObject({ status: 'RUNNING', state: { transport: 'unifiedpush', outstanding: true, wakesThisRun: 1 } });
    const workflowId = registrationWorkflowId(phone.userId, phone.deviceId);
    expect(report.workflow.webUiUrl).toBe(`${uiUrl}/namespaces/default/workflows/${encodeURIComponent(workflowId)}`);

    const text = formatDeviceReport(report).join('\n');
    expect(text).toContain('unifiedpush, RFC 8291 keys (encrypted wakes)');
    expect(text).toContain('outstanding (high priority, sent, not yet drained)');
    const json = JSON.stringify(report);
    for (const secret of [
      phone.endpoint,
      new URL(phone.endpoint).pathname,
      phone.keys.p256dh.toString('base64url'),
      phone.keys.auth.toString('base64url'),
    ]) {
      expect(text).not.toContain(secret);
      expect(json).not.toContain(secret);
    }
  });

  it('as the built command: text and --json, exit 0; a device without registration exits 4', async () => {
    const phone = await wokenPhone();
    const run = runCli('push-admin', ['device', phone.userId, phone.deviceId], cliEnv());
    expect(await run.exit).toBe(0);
    expect(run.output()).toContain(`workflow       push-device:${phone.userId}:${phone.deviceId}: RUNNING`);
    expect(run.output()).toContain(`${uiUrl}/namespaces/default/workflows/`);
    expect(run.output()).not.toContain(new URL(phone.endpoint).pathname);
    const json = runCli('push-admin', ['device', phone.userId, phone.deviceId, '--json'], cliEnv());
    expect(await json.exit).toBe(0);
    expect(JSON.parse(json.output())).toMatchObject({ registration: { transport: 'unifiedpush', encrypted: true }, liveSessions: 1 });

    const nobody = runCli('push-admin', ['device', phone.userId, 'no-such-phone'], cliEnv());
    expect(await nobody.exit).toBe(4);
    expect(nobody.output()).toContain('registration   none');
    expect(nobody.output()).toContain('not found');
  });

  it('refuses a bad command line with its usage, and a missing DATABASE_URL with one line', async () => {
    const bad = runCli('push-admin', ['device', 'alice'], cliEnv());
    expect(await bad.exit).toBe(1);
    expect(bad.output()).toContain('usage: push-admin');
    const unconfigured = runCli('push-admin', ['count'], {});
    expect(await unconfigured.exit).toBe(1);
    expect(unconfigured.output().trim()).toBe('config: DATABASE_URL is required (a postgres:// connection string)');
  });
});

describe('push-admin count', () => {
  it('counts registrations by transport', async () => {
    const before = await countRegistrations(db.pool);
    const user = await host.user();
    await host.registration(user, { transport: 'fcm' });
    await host.registration(user, { transport: 'fcm' });
    const after = await countRegistrations(db.pool);
    const fcm = (c: typeof before) => c.byTransport.find((t) => t.transport === 'fcm')?.registrations ?? 0;
    expect(fcm(after) - fcm(before)).toBe(2);
    const lines: string[] = [];
    expect(
      await runAdmin(
        { command: 'count', json: false },
        () => loadConfig('admin', cliEnv()),
        (line) => void lines.push(line),
      ),
    ).toBe(0);
    expect(lines[0]).toMatch(/^transport +registrations +encrypted +wake-outstanding +with-pending +failing$/);
    expect(lines.find((l) => l.startsWith('fcm'))).toMatch(new RegExp(`^fcm +${fcm(after)} `));
  });
});

describe('push-admin prune', () => {
  it('deletes the registration and its pending rows, and the workflow ends', async () => {
    const phone = await wokenPhone();
    const result = await pruneRegistration(db.pool, h.client, phone.userId, phone.deviceId);
    expect(result).toEqual({ deleted: true, transport: 'unifiedpush', workflowTold: true, workflowError: undefined });
    expect((await h.api.request('GET', '/api/push/registration', { token: phone.token })).status).toBe(404);
    const pending = await db.pool.oneFirst(
      sql.type(z.object({ count: z.number() }))`SELECT count(*)::int AS count FROM push_pending p WHERE p.channel_id = ${phone.dm}`,
    );
    expect(pending).toBe(0);
    const handle = h.client.workflow.getHandle(registrationWorkflowId(phone.userId, phone.deviceId));
    await waitFor('the workflow to end', async () => (await handle.describe()).status.name === 'COMPLETED', 30_000);

    const again = runCli('push-admin', ['prune', phone.userId, phone.deviceId], cliEnv());
    expect(await again.exit).toBe(4);
    expect(again.output()).toContain('had no registration');
  });
});

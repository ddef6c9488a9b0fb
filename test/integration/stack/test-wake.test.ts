/**
 * The test wake end to end on the running product (api, worker): asked for by the phone
 * (`POST /api/push/registration/test`, through the simulated phone) or by an operator
 * (`push-admin wake`), it goes out as one HIGH wake though nothing is pending, the phone drains
 * an empty list, and the delivery state shows both. push-admin prints the provider's own
 * answer: accepted, refused, or held back and until when — never a token, an endpoint or a key.
 */
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseSimulatorArgs } from '../../../simulator/cli-options.js';
import { createDeviceKeys, startDistributor, type LocalDistributor } from '../../../simulator/distributor.js';
import { runSimulator } from '../../../simulator/run.js';
import { runAdmin, type AdminCommand } from '../../../src/admin/admin-cli.js';
import { loadConfig } from '../../../src/config/index.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { hostFixtures, type HostFixtures } from '../../support/host-fixtures.js';
import { signDeviceToken, testJwtSecret } from '../../support/jwt.js';
import { runCli } from './cli.js';
import { productHarness, type ProductHarness } from './harness.js';
import '../../support/provided.js';

let db: TestDatabase;
let h: ProductHarness;
let host: HostFixtures;
let distributor: LocalDistributor;

beforeAll(async () => {
  db = await freshDatabase();
  h = await productHarness(db, { bridge: false });
  host = hostFixtures(db.pool);
  distributor = await startDistributor();
});
afterAll(async () => {
  await distributor?.close();
  await h?.close();
  await db?.drop();
});

/** A device with a live session, signed in on the host. */
async function signedIn(deviceId: string) {
  const userId = await host.user();
  await db.pool.query(
    sql.unsafe`INSERT INTO refresh_tokens (user_id, device_id, expires_at) VALUES (${userId}, ${deviceId}, now() + interval '1 day')`,
  );
  const token = await signDeviceToken({ userId, deviceId, secret: testJwtSecret });
  return { userId, deviceId, token };
}

/** A UnifiedPush phone on this file's distributor, registered through the api, nothing pending. */
async function registeredPhone(deviceId: string) {
  const device = await signedIn(deviceId);
  const keys = createDeviceKeys();
  const endpoint = distributor.register(keys);
  const body = { transport: 'unifiedpush', token: endpoint, p256dh: keys.p256dh.toString('base64url'), auth: keys.auth.toString('base64url') };
  expect((await h.api.request('PUT', '/api/push/registration', { token: device.token, body })).status).toBe(200);
  return { ...device, endpoint, keys };
}

const adminEnv = () => ({ DATABASE_URL: db.url, TEMPORAL_ADDRESS: inject('temporalAddress'), TEMPORAL_TASK_QUEUE: h.taskQueue });

async function pushAdminWake(userId: string, deviceId: string, timeoutMs = 30_000): Promise<{ code: number; text: string }> {
  const lines: string[] = [];
  const command: AdminCommand = { command: 'wake', userId, deviceId, json: false, timeoutMs };
  const code = await runAdmin(
    command,
    () => loadConfig('admin', adminEnv()),
    (line) => void lines.push(line),
  );
  return { code, text: lines.join('\n') };
}

describe('the test wake', () => {
  it('asked for by the phone: one HIGH wake though nothing is pending; it drains an empty list, and GET shows both', async () => {
    const device = await signedIn('sim-test');
    const lines: string[] = [];
    const options = parseSimulatorArgs([
      '--api',
      h.api.url,
      '--token',
      device.token,
      '--test-wake',
      '--wakes',
      '1',
      '--timeout',
      '30',
      '--json',
      '--keep-registration',
    ]);
    const summary = await runSimulator(options, { out: (line) => void lines.push(line) });
    expect(summary).toEqual({ wakes: 1, problems: 0, timedOut: false });
    const events = lines.map((line) => JSON.parse(line) as { event: string; wake?: { priority: string }; items?: unknown[] });
    expect(events.map((e) => e.event)).toEqual(['config', 'registered', 'test-wake', 'waiting', 'wake', 'drained']);
    expect(events.find((e) => e.event === 'wake')!.wake).toMatchObject({ priority: 'high' });
    expect(events.find((e) => e.event === 'drained')!.items).toEqual([]);
    const state = (await h.api.request('GET', '/api/push/registration', { token: device.token })).json as Record<string, unknown>;
    expect(state).toMatchObject({
      last_woken_at: expect.any(String),
      last_drained_at: expect.any(String),
      delivery: { state: 'ok', wakes_since_drain: 0 },
    });
    expect(Date.parse(String(state['last_drained_at']))).toBeGreaterThanOrEqual(Date.parse(String(state['last_woken_at'])));
  });

  it('asked for by an operator: push-admin wake prints the provider’s own answer, and the phone can drain it', async () => {
    const phone = await registeredPhone('admin-test');
    const { code, text } = await pushAdminWake(phone.userId, phone.deviceId);
    expect(code, text).toBe(0);
    expect(text).toContain(`test wake for device ${phone.deviceId} of user ${phone.userId} (unifiedpush)`);
    expect(text).toMatch(/provider {7}UnifiedPush 201 at \S+: accepted/);
    const received = distributor.received.filter((m) => m.endpoint === phone.endpoint);
    expect(received).toHaveLength(1);
    expect(received[0]).toMatchObject({ answered: 201 });
    expect(text).not.toContain(new URL(phone.endpoint).pathname);
    expect((await h.api.request('POST', '/api/push/drain', { token: phone.token })).json).toEqual([]);
    const state = (await h.api.request('GET', '/api/push/registration', { token: phone.token })).json as { delivery: Record<string, unknown> };
    expect(state.delivery).toMatchObject({ wakes_since_drain: 0 });
  });

  it('push-admin wake: a distributor refusing it is shown with its status, and exits 2', async () => {
    const phone = await registeredPhone('admin-refused');
    distributor.answerFor(phone.endpoint, { status: 503 });
    const { code, text } = await pushAdminWake(phone.userId, phone.deviceId);
    expect(code, text).toBe(2);
    expect(text).toMatch(/provider {7}UnifiedPush 503 at \S+: not accepted/);
    distributor.answerFor(phone.endpoint, undefined);
  });

  it('push-admin wake: a back-off says why it is held and until when, at once, and exits 2', async () => {
    const phone = await registeredPhone('admin-held');
    await db.pool.query(sql.unsafe`
      UPDATE push_registrations SET backoff_until = now() + interval '1 hour', backoff_cause = 'rate_limited', backoff_reason = 'UnifiedPush 429: rate limited'
      WHERE user_id = ${phone.userId} AND device_id = ${phone.deviceId}`);
    const started = Date.now();
    const { code, text } = await pushAdminWake(phone.userId, phone.deviceId, 20_000);
    expect(code, text).toBe(2);
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(text).toMatch(/when asked {5}held \(rate_limited\) until \S+/);
    expect(text).toContain('not sent       held back until');
  });

  it('as the built command: exit 0 with the answer; 4 for a device without registration', async () => {
    const phone = await registeredPhone('cli-test');
    const run = runCli('push-admin', ['wake', phone.userId, phone.deviceId, '--timeout', '30'], adminEnv());
    expect(await run.exit, run.output()).toBe(0);
    expect(run.output()).toMatch(/provider {7}UnifiedPush 201/);
    const nobody = runCli('push-admin', ['wake', phone.userId, 'no-such-phone'], adminEnv());
    expect(await nobody.exit).toBe(4);
    expect(nobody.output()).toContain('has no registration');
  });
});

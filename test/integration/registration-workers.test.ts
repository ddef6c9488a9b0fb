/**
 * Registration workflows on the real Temporal dev server with two workers on one task queue
 * and the real claim SQL: every claim produces exactly one wake, no device is woken twice
 * inside its interval, and a worker leaving mid-run strands nobody.
 */
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { waitFor } from '../../devstack/daemons.js';
import { registrationWorkflowId } from '../../temporal/names.js';
import { signalPending, signalRegistered } from '../../temporal/registration-workflows.js';
import type { DeviceIdentity } from '../../domain/vocabulary.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { startDevWorker, type DevWorker } from '../support/dev-worker.js';
import { createDeviceKeys, startDistributor, type FakeDistributor } from '../../simulator/distributor.js';
import { hostFixtures } from '../support/host-fixtures.js';

// Short intervals so rounds take seconds of real time on the dev server.
const minIntervalMs = 1_000;
const env = { PUSH_MIN_INTERVAL_MS: String(minIntervalMs), PUSH_REWAKE_AFTER_MS: '60000' };
const taskQueue = `two-workers-${Date.now()}`;
let db: TestDatabase;
let distributor: FakeDistributor;
let workers: DevWorker[];

beforeAll(async () => {
  db = await freshDatabase();
  distributor = await startDistributor();
  workers = [await startDevWorker(db, { taskQueue, identity: 'worker-a', env }), await startDevWorker(db, { taskQueue, identity: 'worker-b', env })];
});
afterAll(async () => {
  for (const worker of workers ?? []) await worker.stop().catch(() => undefined);
  await distributor?.close();
  await db?.drop();
});

interface TestDevice extends DeviceIdentity {
  readonly endpoint: string;
}

async function register(): Promise<TestDevice> {
  const userId = await hostFixtures(db.pool).user();
  const keys = createDeviceKeys();
  const device = { userId, deviceId: `phone-${userId}`, endpoint: distributor.register(keys) };
  await db.pool.query(sql.unsafe`
    INSERT INTO push_registrations (user_id, device_id, transport, token, up_p256dh, up_auth)
    VALUES (${userId}, ${device.deviceId}, 'unifiedpush', ${device.endpoint}, ${sql.binary(keys.p256dh)}, ${sql.binary(keys.auth)})`);
  await signalRegistered(workers[0]!.client, taskQueue, device, 'unifiedpush');
  return device;
}

async function message(device: TestDevice, channelId: number): Promise<void> {
  const created = await db.pool.oneFirst(sql.type(z.object({ created: z.boolean() }))`
    INSERT INTO push_pending (registration_id, channel_id, message_count, first_message_id, first_at, last_message_id, is_dm)
    SELECT id, ${channelId}, 1, ${channelId}, now(), ${channelId}, false FROM push_registrations WHERE user_id = ${device.userId}
    ON CONFLICT (registration_id, channel_id) DO UPDATE SET message_count = push_pending.message_count + 1
    RETURNING (xmax = 0) AS created`);
  if (created) await signalPending(workers[0]!.client, taskQueue, device, 'unifiedpush');
}

async function drain(device: TestDevice): Promise<void> {
  await db.pool.transaction(async (tx) => {
    await tx.query(sql.unsafe`DELETE FROM push_pending p USING push_registrations r WHERE p.registration_id = r.id AND r.user_id = ${device.userId}`);
    await tx.query(sql.unsafe`UPDATE push_registrations SET wake_outstanding = false WHERE user_id = ${device.userId}`);
  });
}

const wakes = (device: TestDevice) => distributor.received.filter((m) => m.endpoint === device.endpoint);

/** Each device's last claim time in PostgreSQL (`last_woken_at`: the workflow clock when it claimed). */
async function claimTimes(): Promise<Map<string, number>> {
  const rows = await db.pool.any(sql.type(z.object({ user_id: z.string(), last_woken_at: z.date().nullable() }))`
    SELECT user_id, last_woken_at FROM push_registrations`);
  return new Map(rows.map((r) => [r.user_id, r.last_woken_at?.getTime() ?? Number.NaN]));
}

describe('two workers on one task queue', () => {
  it('give every device exactly one wake per round, never two inside the interval', async () => {
    const devices = await Promise.all(Array.from({ length: 16 }, () => register()));
    const rounds = 3;
    const claims = new Map<string, number[]>(devices.map((d) => [d.userId, []]));
    for (let round = 1; round <= rounds; round++) {
      await Promise.all(devices.map((d) => message(d, 100 + round)));
      // Several signals per device at once: duplicates must not turn into extra wakes.
      await Promise.all(devices.map((d) => signalPending(workers.at(-1)!.client, taskQueue, d, 'unifiedpush')));
      await waitFor(`round ${round}: a wake for every device`, async () => devices.every((d) => wakes(d).length >= round), 30_000);
      // The round's one claim per device; the next can only come after the drain below.
      for (const [userId, at] of await claimTimes()) claims.get(userId)?.push(at);
      if (round === 2) {
        // One worker leaves mid-run; the other carries every workflow on.
        await workers[1]!.stop();
        workers = [workers[0]!];
      }
      await Promise.all(devices.map((d) => drain(d)));
    }
    for (const device of devices) {
      const received = wakes(device);
      expect(received, device.deviceId).toHaveLength(rounds);
      expect(received.every((m) => m.problems.length === 0)).toBe(true);
      // The interval holds where the design fixes it: between claims, on the workflow clock as
      // written to PostgreSQL (arrival times would add send jitter on a loaded machine).
      const times = claims.get(device.userId)!;
      expect(times, device.deviceId).toHaveLength(rounds);
      for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!, device.deviceId).toBeGreaterThanOrEqual(minIntervalMs);
    }
  });

  it('shared the work: both workers completed workflow tasks', async () => {
    const devices = (
      await db.pool.any(sql.type(z.object({ user_id: z.string(), device_id: z.string() }))`
      SELECT user_id, device_id FROM push_registrations`)
    ).slice(0, 16);
    const identities = new Set<string>();
    for (const row of devices) {
      const history = await workers[0]!.client.workflow.getHandle(registrationWorkflowId(row.user_id, row.device_id)).fetchHistory();
      for (const event of history.events ?? []) {
        const identity = event.workflowTaskStartedEventAttributes?.identity;
        if (identity) identities.add(identity);
      }
    }
    expect([...identities].sort()).toEqual(['worker-a', 'worker-b']);
  });
});

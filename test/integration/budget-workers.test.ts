/**
 * Two worker replicas on one task queue on the Temporal dev server share each device's FCM
 * wake budget: it lives with the claim in PostgreSQL, so whichever worker runs a
 * device's workflow task, the device never gets more FCM wakes than the budget allows. The
 * refill is an hour, so nothing refills during the test: the bound is exact, not timed.
 */
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../devstack/daemons.js';
import { registrationWorkflowId } from '../../temporal/names.js';
import { signalPending, signalRegistered } from '../../temporal/registration-workflows.js';
import type { DeviceIdentity } from '../../domain/vocabulary.js';
import { stateQuery } from '../../temporal/registration-messages.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { startDevWorker, type DevWorker } from '../support/dev-worker.js';
import { startFakeGoogle, type FakeGoogle } from '../support/workflow-harness.js';
import { hostFixtures } from '../support/host-fixtures.js';

const budget = { burst: 3, dmReserve: 1 };
const taskQueue = `budget-workers-${Date.now()}`;
let db: TestDatabase;
let google: FakeGoogle;
let workers: DevWorker[];

beforeAll(async () => {
  db = await freshDatabase();
  google = await startFakeGoogle();
  const env = {
    ...google.env,
    PUSH_MIN_INTERVAL_MS: '500',
    PUSH_REWAKE_AFTER_MS: '3600000',
    PUSH_FCM_WAKE_BURST: String(budget.burst),
    PUSH_FCM_DM_RESERVE: String(budget.dmReserve),
    PUSH_FCM_WAKE_REFILL_MS: '3600000',
  };
  workers = [await startDevWorker(db, { taskQueue, identity: 'worker-a', env }), await startDevWorker(db, { taskQueue, identity: 'worker-b', env })];
});
afterAll(async () => {
  for (const worker of workers ?? []) await worker.stop().catch(() => undefined);
  await google?.close();
  await db?.drop();
});

interface FcmDevice extends DeviceIdentity {
  readonly token: string;
}

async function register(): Promise<FcmDevice> {
  const userId = await hostFixtures(db.pool).user();
  const device = { userId, deviceId: `phone-${userId}`, token: `budget-${userId}:APA91b${'x'.repeat(100)}` };
  await db.pool.query(
    sql.unsafe`INSERT INTO push_registrations (user_id, device_id, transport, token) VALUES (${userId}, ${device.deviceId}, 'fcm', ${device.token})`,
  );
  await signalRegistered(workers[0]!.client, taskQueue, device, 'fcm');
  return device;
}

async function message(device: FcmDevice, channelId: number, isDm: boolean): Promise<void> {
  await db.pool.query(sql.unsafe`
    INSERT INTO push_pending (registration_id, channel_id, message_count, first_message_id, first_at, last_message_id, is_dm)
    SELECT id, ${channelId}, 1, ${channelId}, now(), ${channelId}, ${isDm} FROM push_registrations WHERE user_id = ${device.userId}`);
  // Both replicas' clients signal: duplicates must not become extra wakes.
  await Promise.all(workers.map((w) => signalPending(w.client, taskQueue, device, 'fcm')));
}

async function drain(device: FcmDevice): Promise<void> {
  await db.pool.transaction(async (tx) => {
    await tx.query(sql.unsafe`UPDATE push_registrations SET wake_outstanding = false WHERE user_id = ${device.userId}`);
    await tx.query(sql.unsafe`DELETE FROM push_pending p USING push_registrations r WHERE p.registration_id = r.id AND r.user_id = ${device.userId}`);
  });
}

const requests = (device: FcmDevice) => google.fcm.received.filter((r) => r.token === device.token);

/** Until the device got `count` wakes, or its workflow waits for the budget. */
async function woken(device: FcmDevice, count: number): Promise<'woken' | 'held back'> {
  const handle = workers[0]!.client.workflow.getHandle(registrationWorkflowId(device.userId, device.deviceId));
  return waitFor(
    `${device.deviceId}: wake ${count} or held back`,
    async () => {
      if (requests(device).length >= count) return 'woken' as const;
      return (await handle.query(stateQuery)).nextTimer?.reason === 'budget' ? ('held back' as const) : undefined;
    },
    30_000,
  );
}

describe("two workers sharing each device's FCM budget", () => {
  it('send no device more wakes than its budget: burst − reserve for chatter, the reserve for a DM, then nothing', async () => {
    const devices = await Promise.all(Array.from({ length: 6 }, () => register()));
    const outcomes = new Map<FcmDevice, string[]>(devices.map((d) => [d, []]));
    for (let round = 1; round <= 4; round++) {
      await Promise.all(devices.map((d) => message(d, 100 + round, false)));
      await Promise.all(devices.map(async (d) => outcomes.get(d)!.push(await woken(d, outcomes.get(d)!.filter((o) => o === 'woken').length + 1))));
      await Promise.all(devices.map((d) => drain(d))); // the phone drains (round 3: the user opened the app)
    }
    for (const d of devices) {
      // burst 3 − reserve 1: two server-channel wakes, then the chatter is held back.
      expect(outcomes.get(d)).toEqual(['woken', 'woken', 'held back', 'held back']);
      expect(requests(d).map((r) => r.priority)).toEqual(['NORMAL', 'NORMAL']);
    }
    // A DM may spend the reserve: one HIGH wake each, then the bucket is empty for everyone.
    await Promise.all(devices.map((d) => message(d, 200, true)));
    for (const d of devices) expect(await woken(d, 3)).toBe('woken');
    await Promise.all(devices.map((d) => drain(d)));
    await Promise.all(devices.map((d) => message(d, 201, true)));
    for (const d of devices) expect(await woken(d, 4)).toBe('held back');
    for (const d of devices) expect(requests(d).map((r) => r.priority)).toEqual(['NORMAL', 'NORMAL', 'HIGH']);
    expect(google.fcm.problems).toEqual([]);
    // Both replicas ran the devices' workflow tasks.
    const identities = new Set<string>();
    for (const d of devices) {
      const history = await workers[0]!.client.workflow.getHandle(registrationWorkflowId(d.userId, d.deviceId)).fetchHistory();
      for (const event of history.events ?? [])
        if (event.workflowTaskStartedEventAttributes?.identity) identities.add(event.workflowTaskStartedEventAttributes.identity);
    }
    expect([...identities].sort()).toEqual(['worker-a', 'worker-b']);
  });
});

/**
 * Devices that talk to the real api the way the app does: a device JWT signed with the
 * stack's secret, `PUT /api/push/registration` with the UnifiedPush endpoint and RFC 8291
 * keys (which starts the device's workflow), `POST /api/push/drain`.
 */
import type { Client } from '@temporalio/client';
import { registrationWorkflowId, settleAll } from '../src/testing.js';
import { deviceApi, type DeviceApi } from '../simulator/api-client.js';
import { signDeviceJwt } from '../simulator/dev-token.js';
import { fetchEvents, typeName } from './history.js';
import type { BenchDevice } from './seed.js';
import { sleep } from './stats.js';

export interface ApiDevice extends BenchDevice {
  readonly jwt: string;
  readonly api: DeviceApi;
  readonly workflowId: string;
}

export async function withApi(devices: readonly BenchDevice[], apiUrl: string, jwtSecret: string): Promise<ApiDevice[]> {
  return Promise.all(
    devices.map(async (device) => {
      const jwt = await signDeviceJwt({ secret: jwtSecret, userId: device.userId, deviceId: device.deviceId });
      return { ...device, jwt, api: deviceApi(apiUrl, jwt), workflowId: registrationWorkflowId(device.userId, device.deviceId) };
    }),
  );
}

/** Registers every device through the api, 16 at a time. */
export async function registerAll(devices: readonly ApiDevice[]): Promise<void> {
  const failures = await settleAll(devices, 16, async (d) => {
    await d.api.register({
      transport: 'unifiedpush',
      token: d.endpoint,
      p256dh: d.keys.p256dh.toString('base64url'),
      auth: d.keys.auth.toString('base64url'),
    });
  });
  if (failures.length > 0) throw new Error(`${failures.length} registrations failed: ${String(failures[0])}`);
}

/**
 * Waits until every device's workflow has finished its last workflow task (the last
 * workflow-task event of its history is WorkflowTaskCompleted: the commands of that task,
 * markers and timers, follow it), and returns each history's length then.
 */
export async function settledHistoryLengths(client: Client, workflowIds: readonly string[], timeoutMs = 120_000): Promise<Map<string, number>> {
  const deadline = Date.now() + timeoutMs;
  const lengths = new Map<string, number>();
  let waiting = [...workflowIds];
  while (waiting.length > 0) {
    const still: string[] = [];
    await settleAll(waiting, 16, async (id) => {
      const events = await fetchEvents(client, id).catch(() => []);
      const lastTask = events
        .map((e) => typeName(e.eventType))
        .filter((t) => t.startsWith('WorkflowTask'))
        .at(-1);
      if (lastTask === 'WorkflowTaskCompleted') lengths.set(id, events.length);
      else still.push(id);
    });
    waiting = still;
    if (waiting.length === 0) break;
    if (Date.now() > deadline) throw new Error(`${waiting.length} workflows still busy after ${timeoutMs} ms`);
    await sleep(500);
  }
  return lengths;
}

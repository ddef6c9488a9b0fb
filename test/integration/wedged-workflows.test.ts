/**
 * A registration workflow that cannot make progress is never silent, and the way back serves it
 * again. Runs begun by a worker of a later release (a patch today's code does not know) are
 * handed to today's worker, which fails their workflow task with a non-determinism error on
 * every attempt: Temporal flags them (TemporalReportedProblems, after 5 failed tasks: about a
 * minute), `push_workflows_wedged` counts them, `push-admin wedged` lists them, and `push-admin
 * restart --wedged` starts them anew from their registrations — the DM pending all along is
 * woken, and a device whose registration was deleted meanwhile is ended, not brought back.
 * Run twice, the restart finds nothing more to do.
 */
import { randomBytes } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { waitFor } from '../../devstack/daemons.js';
import { loadConfig } from '../../src/config/index.js';
import { registry } from '../../src/observability/metrics.js';
import { runAdmin, parseAdminArgs } from '../../src/admin/admin-cli.js';
import { attachWedgedGauge } from '../../src/worker/wedged-gauge.js';
import { createDeviceKeys, startDistributor, type LocalDistributor } from '../../simulator/distributor.js';
import { registrationWorkflowId } from '../../temporal/names.js';
import { signalPending, signalRegistered } from '../../temporal/registration-workflows.js';
import { countWedged } from '../../temporal/wedged-workflows.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { connectClient, quietSdkRuntime, startDevWorker, type DevWorker } from '../support/dev-worker.js';
import { hostFixtures, nextId } from '../support/host-fixtures.js';
import '../support/provided.js';

const taskQueue = `wedged-${randomBytes(4).toString('hex')}`;
let db: TestDatabase;
let distributor: LocalDistributor;
let temporal: { client: Client; close(): Promise<void> };
let worker: DevWorker | undefined;
let detachGauge: (() => void) | undefined;

beforeAll(async () => {
  db = await freshDatabase();
  distributor = await startDistributor();
  temporal = await connectClient();
});
afterAll(async () => {
  detachGauge?.();
  await worker?.stop();
  await temporal?.close();
  await distributor?.close();
  await db?.drop();
});

interface Phone {
  readonly userId: string;
  readonly deviceId: string;
  readonly endpoint: string;
}

async function registeredPhone(): Promise<Phone> {
  const [userId] = await hostFixtures(db.pool).users(1);
  const deviceId = `phone-${nextId()}`;
  const keys = createDeviceKeys();
  const endpoint = distributor.register(keys);
  await db.pool.query(sql.unsafe`
    INSERT INTO push_registrations (user_id, device_id, transport, token, up_p256dh, up_auth)
    VALUES (${userId!}, ${deviceId}, 'unifiedpush', ${endpoint}, ${sql.binary(keys.p256dh)}, ${sql.binary(keys.auth)})`);
  return { userId: userId!, deviceId, endpoint };
}

/** A DM waiting for the phone, as the bridge records it (the signal goes to whatever run there is). */
async function dmFor(phone: Phone): Promise<void> {
  const messageId = nextId();
  await db.pool.query(sql.unsafe`
    INSERT INTO push_pending (registration_id, channel_id, message_count, first_message_id, first_at, last_message_id, is_dm)
    SELECT id, ${nextId()}, 1, ${messageId}, now(), ${messageId}, true FROM push_registrations
    WHERE user_id = ${phone.userId} AND device_id = ${phone.deviceId}`);
  await signalPending(temporal.client, taskQueue, phone, 'unifiedpush');
}

/** Starts the phones' runs on a worker of a later release, lets each complete its first task, and stops that worker. */
async function runsBegunByALaterRelease(phones: readonly Phone[]): Promise<void> {
  quietSdkRuntime();
  const connection = await NativeConnection.connect({ address: inject('temporalAddress') });
  const later = await Worker.create({
    connection,
    taskQueue,
    workflowsPath: new URL('../support/workflows/later-release.ts', import.meta.url).pathname,
  });
  const running = later.run();
  try {
    for (const phone of phones) await signalRegistered(temporal.client, taskQueue, phone, 'unifiedpush');
    for (const phone of phones) {
      await waitFor(
        `${phone.deviceId}'s first task completed by the later release`,
        async () => {
          const history = await temporal.client.workflow.getHandle(registrationWorkflowId(phone.userId, phone.deviceId)).fetchHistory();
          return history.events?.some((e) => e.workflowTaskCompletedEventAttributes != null);
        },
        30_000,
      );
    }
  } finally {
    later.shutdown();
    await running;
    await connection.close();
  }
}

const admin = async (...args: string[]) => {
  const out: string[] = [];
  const code = await runAdmin(
    parseAdminArgs([...args, '--json']),
    () => loadConfig('admin', { DATABASE_URL: db.url, TEMPORAL_ADDRESS: inject('temporalAddress'), TEMPORAL_TASK_QUEUE: taskQueue }),
    (line) => out.push(line),
  );
  return { code, json: JSON.parse(out.join('\n')) as unknown };
};

async function gauge(): Promise<number | undefined> {
  const metric = await registry.getSingleMetric('push_workflows_wedged')?.get();
  return metric?.values.find((v) => v.labels.workflow_type === 'registrationWorkflow')?.value;
}

describe('a registration workflow whose tasks keep failing', () => {
  it('is counted and listed, and push-admin restart --wedged serves it again from its registration', async () => {
    const kept = await registeredPhone();
    const deleted = await registeredPhone();
    await runsBegunByALaterRelease([kept, deleted]);

    // Today's worker takes over; a DM arrives: the replay fails at the unknown patch, again and again.
    worker = await startDevWorker(db, { taskQueue });
    await dmFor(kept);
    await dmFor(deleted);
    detachGauge = attachWedgedGauge(temporal.client, taskQueue, { cacheMs: 0 });
    await waitFor(
      'both runs flagged by Temporal',
      async () => (await countWedged(temporal.client, taskQueue, 'registrationWorkflow')) === 2,
      240_000,
    );
    expect(await gauge()).toBe(2);
    expect(distributor.received).toHaveLength(0);

    const listed = await admin('wedged');
    expect(listed.code).toBe(0);
    expect(listed.json).toEqual(
      expect.arrayContaining(
        [kept, deleted].map((p) =>
          expect.objectContaining({
            userId: p.userId,
            deviceId: p.deviceId,
            problems: expect.arrayContaining(['category=WorkflowTaskFailed', 'cause=WorkflowTaskFailedCauseNonDeterministicError']),
          }),
        ),
      ),
    );

    // Meanwhile one registration is deleted (the api's stop signal reaches no one that can act on it).
    await db.pool.query(sql.unsafe`DELETE FROM push_registrations WHERE user_id = ${deleted.userId} AND device_id = ${deleted.deviceId}`);

    const restarted = await admin('restart', '--wedged');
    expect(restarted.code).toBe(0);
    const outcomes = (restarted.json as { results: { deviceId: string; outcome: string }[] }).results;
    expect(Object.fromEntries(outcomes.map((r) => [r.deviceId, r.outcome]))).toEqual({ [kept.deviceId]: 'restarted', [deleted.deviceId]: 'ended' });

    // The new run's first look finds the DM and wakes the phone; the deleted device stays deleted and ended.
    await waitFor('the DM woken', async () => distributor.received.some((m) => m.endpoint === kept.endpoint && m.urgency === 'high'), 30_000);
    const keptRun = await temporal.client.workflow.getHandle(registrationWorkflowId(kept.userId, kept.deviceId)).describe();
    expect(keptRun.status.name).toBe('RUNNING');
    expect((await temporal.client.workflow.getHandle(registrationWorkflowId(deleted.userId, deleted.deviceId)).describe()).status.name).toBe(
      'TERMINATED',
    );
    expect(await db.pool.anyFirst(sql.unsafe`SELECT device_id FROM push_registrations WHERE device_id = ${deleted.deviceId}`)).toEqual([]);
    expect(distributor.received.filter((m) => m.endpoint === deleted.endpoint)).toHaveLength(0);
    await waitFor('nothing flagged any more', async () => (await countWedged(temporal.client, taskQueue, 'registrationWorkflow')) === 0, 30_000);
    expect(await gauge()).toBe(0);

    // Safe to run twice: nothing more to restart, the healthy run is left alone.
    const again = await admin('restart', '--wedged');
    expect((again.json as { results: { outcome: string }[] }).results.every((r) => r.outcome === 'skipped')).toBe(true);
    expect((await temporal.client.workflow.getHandle(registrationWorkflowId(kept.userId, kept.deviceId)).describe()).runId).toBe(keptRun.runId);

    // One device, wedged or not: restarted from its row; one with neither registration nor workflow: exit 4.
    const one = await admin('restart', kept.userId, kept.deviceId);
    expect(one).toEqual({
      code: 0,
      json: { userId: kept.userId, deviceId: kept.deviceId, outcome: 'restarted', endedRunId: keptRun.runId, runId: expect.any(String) },
    });
    expect(await admin('restart', deleted.userId, deleted.deviceId)).toEqual({
      code: 4,
      json: { userId: deleted.userId, deviceId: deleted.deviceId, outcome: 'absent' },
    });
  }, 360_000);
});

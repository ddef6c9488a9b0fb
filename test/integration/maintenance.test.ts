/**
 * The `push-maintenance` Schedule on the Temporal dev server (the time-skipping server runs no
 * Schedules): one triggered run prunes exactly what docs/design.md, Pruning, says, ends exactly those
 * workflows, wakes the stranded device, and touches nothing else; a second run changes nothing.
 */
import type { Client } from '@temporalio/client';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { waitFor } from '../../devstack/daemons.js';
import { maintenanceWorkflowType, registrationWorkflowId } from '../../temporal/names.js';
import type { MaintenanceInput } from '../../workflows/maintenance.js';
import { signalRegistered } from '../../temporal/registration-workflows.js';
import { ensureMaintenanceSchedule } from '../../temporal/schedule.js';
import type { MaintenanceReport } from '../../workflows/maintenance.js';
import { stateQuery } from '../../temporal/registration-messages.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { startDevWorker, type DevWorker } from '../support/dev-worker.js';
import { createDeviceKeys, startDistributor, type FakeDistributor } from '../../simulator/distributor.js';
import { hostFixtures } from '../support/host-fixtures.js';

let db: TestDatabase;
let distributor: FakeDistributor;
let worker: DevWorker;
let client: Client;
const scheduleId = `push-maintenance-test-${Date.now()}`;

beforeAll(async () => {
  db = await freshDatabase();
  distributor = await startDistributor();
  worker = await startDevWorker(db, { taskQueue: `maintenance-${Date.now()}` });
  client = worker.client;
});
afterAll(async () => {
  await client?.schedule
    .getHandle(scheduleId)
    .delete()
    .catch(() => undefined);
  await worker?.stop();
  await distributor?.close();
  await db?.drop();
});

type Session = 'live' | 'revoked' | 'expired' | 'none';

interface Seeded {
  readonly userId: string;
  readonly deviceId: string;
  readonly endpoint: string;
}

async function seedDevice(session: Session, options: { updatedDaysAgo?: number } = {}): Promise<Seeded> {
  const userId = await hostFixtures(db.pool).user();
  const deviceId = `phone-${userId}`;
  const keys = createDeviceKeys();
  const endpoint = distributor.register(keys);
  await db.pool.query(sql.unsafe`
    INSERT INTO push_registrations (user_id, device_id, transport, token, up_p256dh, up_auth, updated_at)
    VALUES (${userId}, ${deviceId}, 'unifiedpush', ${endpoint}, ${sql.binary(keys.p256dh)}, ${sql.binary(keys.auth)},
            now() - ${options.updatedDaysAgo ?? 0} * interval '1 day')`);
  if (session !== 'none') {
    await db.pool.query(sql.unsafe`
      INSERT INTO refresh_tokens (user_id, device_id, expires_at, revoked_at)
      VALUES (${userId}, ${deviceId},
              now() + ${session === 'expired' ? -1 : 30} * interval '1 day',
              ${session === 'revoked' ? sql.fragment`now()` : sql.fragment`NULL`})`);
  }
  // Another device of the same user with a live session must not keep this one alive.
  await db.pool.query(sql.unsafe`
    INSERT INTO refresh_tokens (user_id, device_id, expires_at) VALUES (${userId}, ${`${deviceId}-other`}, now() + interval '30 days')`);
  return { userId, deviceId, endpoint };
}

async function addPending(device: Seeded, channelId: number, ages: { firstMinutesAgo: number; lastMinutesAgo: number }): Promise<void> {
  await db.pool.query(sql.unsafe`
    INSERT INTO push_pending (registration_id, channel_id, message_count, first_message_id, first_at, last_message_id, is_dm, last_at)
    SELECT id, ${channelId}, 1, ${channelId * 10}, now() - ${ages.firstMinutesAgo} * interval '1 minute',
           ${channelId * 10}, false, now() - ${ages.lastMinutesAgo} * interval '1 minute'
    FROM push_registrations WHERE user_id = ${device.userId} AND device_id = ${device.deviceId}`);
}

async function snapshot(): Promise<readonly unknown[]> {
  return db.pool.any(sql.unsafe`
    SELECT r.user_id, r.device_id, r.wake_outstanding, r.failures, r.updated_at,
           coalesce(json_agg(p.channel_id ORDER BY p.channel_id) FILTER (WHERE p.channel_id IS NOT NULL), '[]') AS pending
    FROM push_registrations r LEFT JOIN push_pending p ON p.registration_id = r.id
    GROUP BY r.id ORDER BY r.id`);
}

async function runMaintenance(): Promise<MaintenanceReport> {
  const handle = client.schedule.getHandle(scheduleId);
  const before = (await handle.describe()).info.recentActions.length;
  await handle.trigger();
  const action = await waitFor('the triggered maintenance run', async () => (await handle.describe()).info.recentActions.at(before)?.action, 30_000);
  return client.workflow.getHandle(action.workflow.workflowId, action.workflow.firstExecutionRunId).result();
}

/** A run of the maintenance workflow with a given budget, outside the Schedule. */
async function runMaintenanceWith(input: MaintenanceInput): Promise<MaintenanceReport> {
  return client.workflow.execute(maintenanceWorkflowType, {
    taskQueue: worker.taskQueue,
    workflowId: `maintenance-budget-${Date.now()}-${Math.random().toString(36).slice(2)}`,
    args: [input],
  });
}

async function registeredAndIdle(session: Session = 'live'): Promise<Seeded> {
  const device = await seedDevice(session);
  await signalRegistered(client, worker.taskQueue, device, 'unifiedpush');
  const handle = client.workflow.getHandle(registrationWorkflowId(device.userId, device.deviceId));
  await waitFor(
    'an idle registration workflow',
    async () => {
      const state = await handle.query(stateQuery);
      return state.nextTimer === null && !state.checkRequested;
    },
    20_000,
  );
  return device;
}

const workflowStatus = async (device: Seeded) =>
  (await client.workflow.getHandle(registrationWorkflowId(device.userId, device.deviceId)).describe()).status.name;

describe('push-maintenance schedule', () => {
  it('is created idempotently, every 10 minutes, overlap skip, running the maintenance workflow', async () => {
    await Promise.all([1, 2, 3].map(() => ensureMaintenanceSchedule(client, { taskQueue: worker.taskQueue, scheduleId })));
    const description = await client.schedule.getHandle(scheduleId).describe();
    expect(description.spec.intervals).toMatchObject([{ every: 600_000 }]);
    expect(description.policies.overlap).toBe('SKIP');
    expect(description.action).toMatchObject({ type: 'startWorkflow', workflowType: maintenanceWorkflowType, taskQueue: worker.taskQueue });
    // The tests below trigger every run themselves: a run of the Schedule's own clock (at a
    // 10-minute boundary) would make a trigger skip (overlap SKIP) or take away its work.
    await client.schedule.getHandle(scheduleId).pause('the tests trigger their own runs');
  });

  it('prunes exactly the right registrations and rows, ends their workflows, heals the stranded one; a second run changes nothing', async () => {
    const keep = await seedDevice('live');
    const revoked = await seedDevice('revoked');
    const expired = await seedDevice('expired');
    const noSession = await seedDevice('none');
    const stale = await seedDevice('live', { updatedDaysAgo: 91 });
    const oldPending = await seedDevice('live', { updatedDaysAgo: 89 });
    const freshPending = await seedDevice('live');
    const stranded = await seedDevice('live');
    const withWorkflows = [keep, revoked, expired, noSession, stale, oldPending, freshPending];
    for (const device of withWorkflows) await signalRegistered(client, worker.taskQueue, device, 'unifiedpush');
    for (const device of withWorkflows) {
      const handle = client.workflow.getHandle(registrationWorkflowId(device.userId, device.deviceId));
      await waitFor(
        'an idle registration workflow',
        async () => (await handle.query(stateQuery)).nextTimer === null && !(await handle.query(stateQuery)).checkRequested,
        20_000,
      );
    }
    // Pending rows written behind the workflows' backs (as if their signals were lost).
    await addPending(oldPending, 1, { firstMinutesAgo: 8 * 24 * 60, lastMinutesAgo: 8 * 24 * 60 });
    await addPending(freshPending, 2, { firstMinutesAgo: 1, lastMinutesAgo: 1 });
    await addPending(stranded, 3, { firstMinutesAgo: 60, lastMinutesAgo: 60 });
    await db.pool.query(sql.unsafe`
      INSERT INTO push_processed_events (message_id, processed_at) VALUES (1, now() - interval '5 days'), (2, now() - interval '1 hour')`);

    const before = await snapshot();
    const report = await runMaintenance();
    expect(report).toEqual({
      prunedNoSession: 3,
      prunedNotReregistered90d: 1,
      prunedUntouchedPendingRows: 1,
      forgottenProcessedEvents: 1,
      healedStranded: 1,
      endedOrphanWorkflows: 0,
      startedMissingWorkflows: 0,
      unfinished: [],
    });

    const remaining = (await db.pool.any(sql.type(z.object({ user_id: z.string() }))`SELECT user_id FROM push_registrations`)).map((r) => r.user_id);
    expect(remaining.sort()).toEqual([keep, oldPending, freshPending, stranded].map((d) => d.userId).sort());
    for (const device of [revoked, expired, noSession, stale]) {
      await waitFor('the pruned registration workflow to end', async () => (await workflowStatus(device)) === 'COMPLETED', 20_000);
    }
    for (const device of [keep, oldPending, freshPending]) expect(await workflowStatus(device)).toBe('RUNNING');
    expect(await db.pool.anyFirst(sql.unsafe`SELECT channel_id FROM push_pending ORDER BY channel_id`)).toEqual(['2', '3']);
    expect(await db.pool.anyFirst(sql.unsafe`SELECT message_id FROM push_processed_events`)).toEqual(['2']);

    // The stranded device (no workflow at all, like after a wiped namespace) got one: and a wake.
    await waitFor('the stranded device woken', async () => distributor.received.some((m) => m.endpoint === stranded.endpoint), 20_000);
    expect(await workflowStatus(stranded)).toBe('RUNNING');
    // Nothing else was touched: the fresh pending device was not woken by maintenance.
    expect(distributor.received.filter((m) => m.endpoint !== stranded.endpoint)).toEqual([]);
    const keptBefore = before.filter((row) => [keep, freshPending].some((d) => (row as { user_id: string }).user_id === d.userId));
    const keptAfter = (await snapshot()).filter((row) => [keep, freshPending].some((d) => (row as { user_id: string }).user_id === d.userId));
    expect(keptAfter).toEqual(keptBefore);

    const afterFirst = await snapshot();
    expect(await runMaintenance()).toEqual({
      prunedNoSession: 0,
      prunedNotReregistered90d: 0,
      prunedUntouchedPendingRows: 0,
      forgottenProcessedEvents: 0,
      healedStranded: 0,
      endedOrphanWorkflows: 0,
      startedMissingWorkflows: 0,
      unfinished: [],
    });
    expect(await snapshot()).toEqual(afterFirst);
  });

  it('ends the workflow of a registration that went without a stop signal: its user deleted by the host, or the row deleted directly', async () => {
    const userDeleted = await registeredAndIdle();
    const rowDeleted = await registeredAndIdle();
    const kept = await registeredAndIdle();
    // The host deletes a user: ON DELETE CASCADE removes the registration, nobody signals.
    await db.pool.query(sql.unsafe`DELETE FROM users WHERE id = ${userDeleted.userId}`);
    await db.pool.query(sql.unsafe`DELETE FROM push_registrations WHERE user_id = ${rowDeleted.userId}`);
    expect(await workflowStatus(userDeleted)).toBe('RUNNING');

    const report = await runMaintenance();
    for (const device of [userDeleted, rowDeleted]) {
      await waitFor('the orphaned workflow to end', async () => (await workflowStatus(device)) === 'COMPLETED', 20_000);
    }
    expect(report).toMatchObject({ endedOrphanWorkflows: 2, prunedNoSession: 0, startedMissingWorkflows: 0, unfinished: [] });
    expect(await workflowStatus(kept)).toBe('RUNNING');
    expect((await runMaintenance()).endedOrphanWorkflows).toBe(0);
  });

  it('gives a registration without a running workflow one, without waking it', async () => {
    const lost = await seedDevice('live'); // as if its PUT's start never reached Temporal
    const report = await runMaintenance();
    expect(await workflowStatus(lost)).toBe('RUNNING');
    expect(report).toMatchObject({ startedMissingWorkflows: 1, endedOrphanWorkflows: 0, healedStranded: 0 });
    const handle = client.workflow.getHandle(registrationWorkflowId(lost.userId, lost.deviceId));
    await waitFor('the new workflow idle', async () => (await handle.query(stateQuery)).checkRequested === false, 20_000);
    expect(distributor.received.filter((m) => m.endpoint === lost.endpoint)).toEqual([]);
    expect((await runMaintenance()).startedMissingWorkflows).toBe(0);
  });

  it('walks the running workflows page by page across runs, and a later run finishes what an earlier one left', async () => {
    const orphans = await Promise.all(Array.from({ length: 5 }, () => registeredAndIdle()));
    await db.pool.query(sql.unsafe`
      DELETE FROM push_registrations WHERE user_id = ANY(${sql.array(
        orphans.map((o) => o.userId),
        'int8',
      )})`);
    const running = async () => (await Promise.all(orphans.map(workflowStatus))).filter((s) => s === 'RUNNING').length;
    // One page of three workflows per run: the newest first, the position kept in PostgreSQL.
    const budget: MaintenanceInput = { only: ['orphanWorkflows'], windowSize: 3, windowsPerSlice: 1, slicesPerStep: 1 };
    const first = await runMaintenanceWith(budget);
    expect(first.unfinished).toEqual(['orphanWorkflows']);
    expect(first.endedOrphanWorkflows).toBeLessThanOrEqual(3);
    let ended = first.endedOrphanWorkflows;
    let runs = 1;
    for (let last = first; last.unfinished.length > 0; runs++) {
      if (runs > 40) throw new Error('the orphan scan never completed its pass');
      last = await runMaintenanceWith(budget);
      ended += last.endedOrphanWorkflows;
    }
    expect(runs).toBeGreaterThan(1);
    expect(ended).toBe(5);
    await waitFor('every orphaned workflow to end', async () => (await running()) === 0, 20_000);
    const position = await db.pool.oneFirst(sql.unsafe`SELECT position FROM push_maintenance_cursors WHERE scan = 'orphan-workflows'`);
    expect(position).toBe(''); // the pass is complete: the next one starts again from the newest
  });
});

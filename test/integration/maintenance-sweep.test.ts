/**
 * The no-session rule covers the whole table at any size: 120,000
 * registrations with live sessions, then 1,000 without. The sweep walks the table in windows
 * and keeps its position in PostgreSQL, so a run whose budget ends mid-table is continued by
 * the next one: the 1,000 are gone within two maintenance runs. (The scan used to start from
 * id 0 every run and stop after 100,000 registrations, so the last ones were never reached.)
 */
import type { Client } from '@temporalio/client';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { maintenanceWorkflowType } from '../../temporal/names.js';
import type { MaintenanceInput, MaintenanceReport } from '../../workflows/maintenance.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { startDevWorker, type DevWorker } from '../support/dev-worker.js';

const live = 120_000;
const withoutSession = 1_000;

let db: TestDatabase;
let worker: DevWorker;
let client: Client;

beforeAll(async () => {
  db = await freshDatabase();
  worker = await startDevWorker(db, { taskQueue: `maintenance-sweep-${Date.now()}` });
  client = worker.client;
  // Set-based loading: users 1…121,000, one registration each in id order, sessions for the first 120,000.
  const total = live + withoutSession;
  await db.pool.query(sql.unsafe`INSERT INTO users (id, username) SELECT g, 'sweep-' || g FROM generate_series(1, ${total}) g`);
  await db.pool.query(sql.unsafe`
    INSERT INTO push_registrations (user_id, device_id, transport, token)
    SELECT g, 'phone', 'fcm', 'token-' || g FROM generate_series(1, ${total}) g ORDER BY g`);
  await db.pool.query(sql.unsafe`
    INSERT INTO refresh_tokens (user_id, device_id, expires_at)
    SELECT g, 'phone', now() + interval '30 days' FROM generate_series(1, ${live}) g`);
  await db.pool.query(sql.unsafe`ANALYZE`);
});
afterAll(async () => {
  await worker?.stop();
  await db?.drop();
});

/** A maintenance run of the no-session step alone (the others would start 121,000 workflows here). */
async function run(input: MaintenanceInput): Promise<MaintenanceReport> {
  return client.workflow.execute(maintenanceWorkflowType, {
    taskQueue: worker.taskQueue,
    workflowId: `maintenance-sweep-${Date.now()}`,
    args: [{ only: ['noSession'], ...input }],
  });
}

const remaining = async () => {
  const counts = await db.pool.one(sql.type(z.object({ live: z.number(), without: z.number() }))`
    SELECT count(*) FILTER (WHERE user_id <= ${live})::int AS live, count(*) FILTER (WHERE user_id > ${live})::int AS without
    FROM push_registrations`);
  return counts;
};

describe('the no-session sweep at 121,000 registrations', () => {
  it('prunes the last 1,000 within two runs when each run covers only part of the table', async () => {
    // A budget of 70,000 registrations per run: the first run stops mid-table…
    const budget: MaintenanceInput = { windowSize: 1_000, windowsPerSlice: 10, slicesPerStep: 7 };
    const first = await run(budget);
    expect(await remaining()).toEqual({ live, without: withoutSession });
    // …and the second goes on from where it stopped, to the end of the table.
    const second = await run(budget);
    expect(await remaining()).toEqual({ live, without: 0 });
    expect(first).toMatchObject({ prunedNoSession: 0, unfinished: ['noSession'] });
    expect(second).toMatchObject({ prunedNoSession: withoutSession, unfinished: [] });
  }, 240_000); // a few seconds on two quiet cores; ~30 s seen with the CPUs loaded

  it('covers the whole table in one run with the default budget', async () => {
    const total = live + withoutSession;
    await db.pool.query(sql.unsafe`
      INSERT INTO push_registrations (user_id, device_id, transport, token)
      SELECT g, 'phone', 'fcm', 'token-' || g FROM generate_series(${live + 1}::int, ${total}::int) g ORDER BY g`);
    const report = await run({});
    expect(await remaining()).toEqual({ live, without: 0 });
    expect(report).toMatchObject({ prunedNoSession: withoutSession, unfinished: [] });
  }, 240_000);
});

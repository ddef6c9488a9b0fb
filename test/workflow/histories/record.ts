/**
 * Records the histories that test/workflow/replay.test.ts replays: one per path of the
 * registration workflow, written by the workflow code of the day they were recorded. Once
 * recorded they are never re-recorded for that code: they stand for runs that were in flight
 * when the workflow changed, and every later workflow must replay them (`patched()`).
 *
 *   npx vitest run -c test/workflow/histories/vitest.record.config.ts
 *
 * writes test/workflow/histories/<name>.json for each scenario below that has no file yet.
 * Name a new set of recordings after what they precede (e.g. `before-escalation-…`).
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, it } from 'vitest';
import { minIntervalMs, rewakeAfterMs, WorkflowHarness, type Device } from '../../support/workflow-harness.js';

const prefix = process.env.HISTORY_PREFIX ?? 'recorded';
const dir = new URL('.', import.meta.url).pathname;

let ups: WorkflowHarness;
let fcm: WorkflowHarness;
beforeAll(async () => {
  ups = await WorkflowHarness.start('record-up');
  fcm = await WorkflowHarness.start('record-fcm', {
    fcm: true,
    env: { PUSH_FCM_WAKE_BURST: '4', PUSH_FCM_WAKE_REFILL_MS: '180000', PUSH_FCM_DM_RESERVE: '2' },
  });
}, 180_000);
afterAll(async () => {
  await ups?.close();
  await fcm?.close();
});

async function save(h: WorkflowHarness, device: Device, scenario: string): Promise<void> {
  await h.settle();
  const history = await h.handle(device).fetchHistory();
  const file = join(dir, `${prefix}-${scenario}.json`);
  if (existsSync(file)) return;
  const json = temporal.api.history.v1.History.toObject(temporal.api.history.v1.History.fromObject(history), {
    longs: String,
    enums: String,
    bytes: String,
  });
  writeFileSync(file, JSON.stringify({ workflowId: h.handle(device).workflowId, history: json }) + '\n');
}

it('records: quiet cycles (wake, drain, idle)', async () => {
  const h = ups;
  const device = await h.registerDevice();
  for (let round = 0; round < 3; round++) {
    await h.message(device, 10 + round, round === 1);
    await h.untilWakes(device, round + 1);
    await h.drain(device);
    await h.skip(minIntervalMs * 2);
  }
  await save(h, device, 'quiet-cycles');
}, 300_000);

it('records: a busy channel (interval timers, pending while outstanding, a lost drained, a re-wake)', async () => {
  const h = ups;
  const device = await h.registerDevice();
  await h.message(device, 10);
  await h.untilWakes(device, 1);
  await h.drain(device);
  await h.message(device, 11); // inside the interval: woken when it ends
  await h.skip(minIntervalMs);
  await h.untilWakes(device, 2);
  await h.message(device, 12); // while outstanding: one look at the interval
  await h.skip(minIntervalMs);
  await h.drain(device, { signal: false }); // the drained signal goes missing
  await h.message(device, 13);
  await h.skip(minIntervalMs);
  await h.untilWakes(device, 3);
  await h.message(device, 14);
  await h.skip(rewakeAfterMs); // undrained: the re-wake
  await h.untilWakes(device, 4);
  await h.drain(device);
  await h.skip(minIntervalMs);
  await save(h, device, 'busy-channel');
}, 300_000);

it('records: a DM while a server-channel wake is outstanding (waits for the re-wake)', async () => {
  const h = ups;
  const device = await h.registerDevice();
  await h.message(device, 10);
  await h.untilWakes(device, 1);
  await h.skip(5_000);
  await h.message(device, 20, true);
  await h.skip(minIntervalMs);
  await h.message(device, 21, true);
  await h.skip(rewakeAfterMs);
  await h.untilWakes(device, 2);
  await h.drain(device);
  await h.skip(minIntervalMs);
  await save(h, device, 'dm-behind-channel-wake');
}, 300_000);

it('records: a distributor that rate-limits, then fails, then recovers (deferred sends, back-offs)', async () => {
  const h = ups;
  const device = await h.registerDevice();
  h.distributor.script({ status: 429, headers: { 'retry-after': '60' } }, { status: 500 }, { status: 500 });
  await h.message(device, 10);
  for (let step = 0; step < 12 && h.delivered(device).length === 0; step++) await h.skip(60_000);
  await h.untilDelivered(device, 1);
  await h.drain(device);
  await h.skip(minIntervalMs);
  await save(h, device, 'deferred-sends');
}, 300_000);

it('records: the FCM budget used up by chatter, then a DM from the reserve', async () => {
  const h = fcm;
  const device = await h.registerDevice({ transport: 'fcm' });
  for (let round = 0; round < 5; round++) {
    await h.message(device, 10);
    await h.untilWakes(device, Math.min(round + 1, 2));
    await h.drain(device);
    await h.skip(minIntervalMs);
  }
  await h.message(device, 20, true);
  await h.skip(minIntervalMs);
  await h.skip(180_000);
  await h.drain(device);
  await h.skip(minIntervalMs);
  await save(h, device, 'fcm-budget');
}, 300_000);

it('records: runs that continue as new', async () => {
  const h = ups;
  const device = await h.registerDevice({ continueAsNewAfterWakes: 2 });
  for (let round = 0; round < 3; round++) {
    await h.message(device, 10 + round);
    await h.untilWakes(device, round + 1);
    await h.drain(device);
    await h.skip(minIntervalMs);
  }
  await save(h, device, 'continued-run');
}, 300_000);

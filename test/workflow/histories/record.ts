/**
 * Records the histories that test/workflow/replay.test.ts replays: one per path of the
 * registration workflow, and one per state a run can be in when its worker is replaced — a
 * wake outstanding, a DM pending, an escalation due, a back-off, an outage hold, a budget
 * hold, a send our configuration holds back, a run that continued as new — written by the
 * workflow code of the tree it runs in. Once recorded they are never re-recorded for that
 * code: they stand for runs that were in flight when the workflow changed, and every later
 * workflow must replay them (`patched()`).
 *
 * In this tree (today's code):
 *
 *   npx vitest run -c test/workflow/histories/vitest.record.config.ts
 *
 * writes test/workflow/histories/<HISTORY_PREFIX>-<scenario>.json for each scenario below
 * that has no file yet. For a previous release, `npm run -s record-histories -- <commit>`
 * (record-previous.ts) runs this same file inside that release's tree, with that release's
 * harness and workflow code, and writes here. So the scenarios may use only the harness
 * calls every recorded release has (`registerDevice`, `message`, `drain`, `skip`,
 * `untilWakes`, `untilDelivered`, the fakes' `script`/`answerAll`, `handle`, `settle`).
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, it } from 'vitest';
import { minIntervalMs, rewakeAfterMs, WorkflowHarness, type Device } from '../../support/workflow-harness.js';
import { googleStatusError } from '../../../devstack/stand-ins/fcm.js';
import { registeredSignal } from '../../../temporal/registration-messages.js';

const prefix = process.env.HISTORY_PREFIX ?? 'recorded';
const dir = process.env.HISTORY_DIR ?? new URL('.', import.meta.url).pathname;

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

async function save(h: WorkflowHarness, device: Device, scenario: string, runId?: string): Promise<void> {
  await h.settle();
  const file = join(dir, `${prefix}-${scenario}.json`);
  if (existsSync(file)) return;
  const handle = runId === undefined ? h.handle(device) : h.client.workflow.getHandle(h.handle(device).workflowId, runId);
  const history = await handle.fetchHistory();
  const json = temporal.api.history.v1.History.toObject(temporal.api.history.v1.History.fromObject(history), {
    longs: String,
    enums: String,
    bytes: String,
  });
  writeFileSync(file, JSON.stringify({ workflowId: handle.workflowId, history: json }) + '\n');
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

it('records: a DM while a server-channel wake is outstanding (escalated, or waiting for the re-wake)', async () => {
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

it('records: runs that continue as new (the first run, ended by continue-as-new, and the run after)', async () => {
  const h = ups;
  const device = await h.registerDevice({ continueAsNewAfterWakes: 2 });
  const firstRun = (await h.handle(device).describe()).runId;
  for (let round = 0; round < 3; round++) {
    await h.message(device, 10 + round);
    await h.untilWakes(device, round + 1);
    await h.drain(device);
    await h.skip(minIntervalMs);
  }
  await save(h, device, 'continued-run');
  await save(h, device, 'continued-run-first', firstRun);
}, 300_000);

// Runs in flight: each history ends in the state a worker replacement finds it in.

it('records, in flight: a wake outstanding (undrained, its re-wake ahead)', async () => {
  const h = ups;
  const device = await h.registerDevice();
  await h.message(device, 10);
  await h.untilWakes(device, 1);
  await h.skip(60_000);
  await save(h, device, 'at-wake-outstanding');
}, 300_000);

it('records, in flight: a DM pending inside the interval (drained, then a DM)', async () => {
  const h = ups;
  const device = await h.registerDevice();
  await h.message(device, 10);
  await h.untilWakes(device, 1);
  await h.drain(device);
  await h.skip(2_000);
  await h.message(device, 20, true);
  await save(h, device, 'at-dm-pending');
}, 300_000);

it('records, in flight: an escalation due (a DM behind an outstanding server-channel wake, before the interval ends)', async () => {
  const h = ups;
  const device = await h.registerDevice();
  await h.message(device, 10);
  await h.untilWakes(device, 1);
  await h.skip(2_000);
  await h.message(device, 20, true);
  await save(h, device, 'at-escalation-due');
}, 300_000);

it('records, in flight: a back-off (429 with a long Retry-After)', async () => {
  const h = ups;
  const device = await h.registerDevice();
  h.distributor.script({ status: 429, headers: { 'retry-after': '3600' } });
  await h.message(device, 10);
  await h.untilWakes(device, 1);
  await h.skip(60_000);
  await save(h, device, 'at-backoff');
}, 300_000);

it('records, in flight: a new endpoint registered during a back-off', async () => {
  const h = ups;
  const device = await h.registerDevice();
  h.distributor.script({ status: 429, headers: { 'retry-after': '3600' } });
  await h.message(device, 10);
  await h.untilWakes(device, 1);
  await h.skip(60_000);
  // The app registers again (same endpoint, as after a restart): the workflow is told.
  await h.handle(device).signal(registeredSignal, { transport: 'unifiedpush' });
  await h.skip(minIntervalMs);
  await save(h, device, 'at-registered-during-backoff');
}, 300_000);

it('records, in flight: an outage hold (every endpoint of the distributor failing)', async () => {
  const h = ups;
  const devices: Device[] = [];
  for (let i = 0; i < 4; i++) devices.push(await h.registerDevice());
  for (const device of devices) await h.message(device, 10);
  for (const device of devices) await h.untilDelivered(device, 1);
  for (const device of devices) await h.drain(device);
  await h.skip(2 * 60_000);
  h.distributor.answerAll({ status: 503 });
  for (const device of devices) await h.message(device, 11);
  for (let step = 0; step < 6; step++) await h.skip(60_000);
  await save(h, devices[0]!, 'at-outage-first');
  await save(h, devices.at(-1)!, 'at-outage-held');
  h.distributor.answerAll(undefined);
  // Let them be woken, so that the next scenarios' skips do not wait behind their timers.
  for (let step = 0; step < 10 && !devices.every((d) => h.delivered(d).length > 1); step++) await h.skip(30_000);
  for (const device of devices) await h.drain(device);
}, 300_000);

it('records, in flight: a budget hold (FCM budget spent by channel chatter)', async () => {
  const h = fcm;
  const device = await h.registerDevice({ transport: 'fcm' });
  // A burst of 4 with 2 kept for DMs: two channel wakes spend what channels may.
  for (let round = 0; round < 2; round++) {
    await h.message(device, 10);
    await h.untilWakes(device, round + 1);
    await h.drain(device);
    await h.skip(minIntervalMs);
  }
  await h.message(device, 10);
  await h.skip(minIntervalMs);
  await save(h, device, 'at-budget-held');
}, 300_000);

it('records, in flight: a send our configuration holds back (FCM refused for every device)', async () => {
  const h = fcm;
  const device = await h.registerDevice({ transport: 'fcm' });
  h.google!.fcm.answerAll(googleStatusError(403, 'PERMISSION_DENIED')); // the service account may not send: ours to fix
  await h.message(device, 10);
  await h.untilWakes(device, 1);
  for (let step = 0; step < 3; step++) await h.skip(5 * 60_000);
  h.google!.fcm.answerAll(undefined);
  await save(h, device, 'at-misconfigured');
}, 300_000);

it('records: a registration deleted (the run ends)', async () => {
  const h = ups;
  const device = await h.registerDevice();
  await h.message(device, 10);
  await h.untilWakes(device, 1);
  await h.unregister(device);
  await h.settle();
  await save(h, device, 'deleted');
}, 300_000);

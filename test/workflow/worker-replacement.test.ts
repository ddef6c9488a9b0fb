/**
 * Durability across workers: a registration's timers survive its worker being replaced, and
 * every history it writes replays deterministically on the current workflow code. Workers
 * here keep no workflow cache, so each task is a full replay (and none is pinned to a worker
 * that went away).
 */
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workflowsSourcePath } from '../../src/worker/temporal-worker.js';
import { minIntervalMs, rewakeAfterMs, WorkflowHarness } from '../support/workflow-harness.js';

let h: WorkflowHarness;
beforeAll(async () => {
  h = await WorkflowHarness.start('replacement', { cacheWorkflows: false });
});
afterAll(async () => {
  await h?.close();
});

describe('registration workflow across workers', () => {
  it('keeps its timers when the worker is replaced mid-cycle', async () => {
    const device = await h.registerDevice();
    await h.message(device, 10);
    await h.untilWakes(device, 1);
    // Mid-cycle: the wake is recorded and the re-wake timer armed, no task in flight.
    await h.until(device, 'the re-wake armed', (s) => s.outstanding && s.nextTimer?.reason === 'rewake');
    await h.settle();
    const first = Date.parse((await h.state(device)).lastWokenAt!);
    await h.stopWorker();
    await h.skip(rewakeAfterMs / 2); // time passes with no worker at all
    await h.startWorker();
    await h.skip(rewakeAfterMs / 2);
    await h.untilWakes(device, 2);
    const second = Date.parse((await h.state(device)).lastWokenAt!);
    // The re-wake timer's wake (a timer re-armed by the new worker would come rewakeAfterMs / 2
    // later); not a latency bound: the claim's workflow time includes the task's scheduling.
    expect(second - first).toBeGreaterThanOrEqual(rewakeAfterMs);
    expect(second - first).toBeLessThan(rewakeAfterMs + minIntervalMs);
  });

  it('writes histories that replay deterministically', async () => {
    const device = await h.registerDevice();
    for (let round = 0; round < 4; round++) {
      await h.message(device, 10 + round, round % 2 === 0);
      await h.untilWakes(device, round + 1);
      if (round !== 2)
        await h.drain(device); // one drained signal goes missing…
      else await h.drain(device, { signal: false });
      await h.message(device, 20 + round);
      await h.skip(round === 2 ? rewakeAfterMs : minIntervalMs); // …and heals at the re-wake
    }
    const history = await h.handle(device).fetchHistory();
    await expect(Worker.runReplayHistory({ workflowsPath: workflowsSourcePath }, history)).resolves.toBeUndefined();
  });
});

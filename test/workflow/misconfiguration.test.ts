/**
 * A configuration error of ours is never silently consumed, and never grows a history without
 * bound: an FCM wake on a worker without FCM is held back — counted in a metric, nothing
 * counted against the device, the claim released with a back-off of its own that grows to an
 * hour — for as long as it takes (ten simulated days here), at a bounded number of history
 * events a day. Once a worker with the configuration fixed starts, the wake goes out at once,
 * not at the end of the back-off. Uncached workers: the fixed worker replaces the broken one
 * mid-workflow (the test server never hands a stopped worker's sticky tasks back).
 */
import type { WorkflowHandle } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { misconfiguredOrigin } from '../../domain/backoff.js';
import { wakes } from '../../activities/metrics.js';
import { WorkflowHarness } from '../support/workflow-harness.js';

let h: WorkflowHarness;
beforeAll(async () => {
  h = await WorkflowHarness.start('misconfiguration', { fcm: true, fcmConfigured: false, cacheWorkflows: false });
});
afterAll(async () => {
  await h?.close();
});

const dayMs = 24 * 3_600_000;

async function configErrors(): Promise<number> {
  return (await wakes.get()).values.filter((v) => v.labels.outcome === 'misconfigured').reduce((sum, v) => sum + v.value, 0);
}

/** History events of every run of the workflow (following continue-as-new back to the first), and how many runs. */
async function allRuns(handle: WorkflowHandle): Promise<{ events: number; runs: number }> {
  let runId: string | undefined = (await handle.describe()).runId;
  let events = 0;
  let runs = 0;
  while (runId !== undefined && runId !== '') {
    const history = await h.client.workflow.getHandle(handle.workflowId, runId).fetchHistory();
    events += history.events?.length ?? 0;
    runs++;
    runId = history.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId ?? undefined;
  }
  return { events, runs };
}

describe('an FCM wake on a worker without FCM', () => {
  it('is held back for ten days at a bounded cost, counts nothing against the device, and goes out once a fixed worker starts', async () => {
    const before = await configErrors();
    // Runs of 25 claims, not the product's 200: the workers here are uncached, so every task
    // replays its run, and a short run keeps ten days of them cheap. The bound per day is the same.
    const device = await h.registerDevice({ transport: 'fcm', continueAsNewAfterWakes: 25 });
    await h.message(device, 10, true);
    for (let day = 0; day < 10; day++) await h.skip(dayMs);

    // Visible: every attempt is misconfigured in the metric; never a request to FCM.
    expect(await configErrors()).toBeGreaterThanOrEqual(before + 10 * 24);
    expect(h.wakes(device)).toHaveLength(0);
    expect(await h.row(device)).toMatchObject({ failures: 0, wake_outstanding: false });
    const { events, runs } = await allRuns(h.handle(device));
    // An attempt an hour at most once the back-off has grown: well under the ~1,400 events a
    // day of a send retried every five minutes inside one run, and the run continues as new.
    expect(events / 10).toBeLessThan(300);
    expect(runs).toBeGreaterThanOrEqual(5);

    await h.restartWorker(h.google!.env); // the operator adds FCM_CREDENTIALS_JSON
    const fixedAt = await h.env.currentTimeMs();
    await h.healthRound(); // the fixed worker's first round ends the misconfiguration's back-offs
    await h.untilDelivered(device, 1);
    expect(h.delivered(device)[0]).toMatchObject({ priority: 'HIGH' });
    // At once, not at the end of an hour's back-off.
    expect((await h.env.currentTimeMs()) - fixedAt).toBeLessThan(60_000);
    expect(await h.row(device)).toMatchObject({ failures: 0 });
    expect((await h.row(device))?.backoff_origin ?? null).not.toBe(misconfiguredOrigin('fcm'));
  }, 600_000);
});

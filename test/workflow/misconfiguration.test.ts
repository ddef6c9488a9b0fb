/**
 * A configuration error of ours is never silently consumed (issue 12.4): an FCM wake on a
 * worker without FCM stays a failing, retried send — counted in a metric, the registration
 * untouched — and goes out once a worker with the configuration fixed runs, at the next retry
 * rather than at the re-wake. Uncached workers: the fixed worker replaces the broken one
 * mid-workflow (the test server never hands a stopped worker's sticky tasks back).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { misconfiguredRetryMs } from '../../activities/registration.js';
import { wakes } from '../../activities/metrics.js';
import { rewakeAfterMs, WorkflowHarness } from '../support/workflow-harness.js';

let h: WorkflowHarness;
beforeAll(async () => {
  h = await WorkflowHarness.start('misconfiguration', { fcm: true, fcmConfigured: false, cacheWorkflows: false });
});
afterAll(async () => {
  await h?.close();
});

async function configErrors(): Promise<number> {
  return (await wakes.get()).values.filter((v) => v.labels.outcome === 'config-error').reduce((sum, v) => sum + v.value, 0);
}

describe('an FCM wake on a worker without FCM', () => {
  it('keeps failing visibly, counts nothing against the device, and goes out once the worker is fixed', async () => {
    const before = await configErrors();
    const device = await h.registerDevice({ transport: 'fcm' });
    await h.message(device, 10, true);
    // Each retry (every few minutes) is one more config-error, never a request to FCM.
    await h.skip(3 * misconfiguredRetryMs);
    expect(await configErrors()).toBeGreaterThanOrEqual(before + 3);
    expect(h.wakes(device)).toHaveLength(0);
    expect(await h.row(device)).toMatchObject({ failures: 0, wake_outstanding: true, backoff_until: null });
    const claimedAt = (await h.row(device))!.last_woken_at!.getTime();

    await h.restartWorker(h.google!.env); // the operator adds FCM_CREDENTIALS_JSON
    const fixedAt = await h.env.currentTimeMs();
    await h.skip(misconfiguredRetryMs);
    await h.untilDelivered(device, 1);
    expect(h.delivered(device)[0]).toMatchObject({ priority: 'HIGH' });
    // At the next retry of the send, well before a re-wake would try again.
    expect((await h.env.currentTimeMs()) - fixedAt).toBeLessThan(misconfiguredRetryMs + 60_000);
    expect(misconfiguredRetryMs + 60_000).toBeLessThan(rewakeAfterMs);
    // The same claim, sent at last — one wake, and a wake of now: no re-wake right after it,
    // even with new messages asking the workflow to look.
    expect((await h.row(device))!.last_woken_at!.getTime()).toBe(claimedAt);
    expect(h.delivered(device)).toHaveLength(1);
    await h.message(device, 11);
    await h.skip(2 * 60_000);
    expect(h.delivered(device)).toHaveLength(1);
    const state = await h.until(device, 'waiting for the re-wake', (s) => s.nextTimer?.reason === 'rewake');
    expect(Date.parse(state.nextTimer!.at)).toBeGreaterThan(fixedAt + rewakeAfterMs);
  }, 300_000);
});

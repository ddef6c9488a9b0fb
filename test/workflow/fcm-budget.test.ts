/**
 * The FCM wake budget through the whole path: the registration workflow on the
 * time-skipping server, the real claim SQL, the real FCM transport with its OAuth token, and a
 * fake Google on loopback. A phone in a busy server channel drains every wake at once.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../devstack/daemons.js';
import type { FcmRequestRecord } from '../../devstack/stand-ins/fcm.js';
import { minIntervalMs, WorkflowHarness, type Device } from '../support/workflow-harness.js';

const burst = 20;
// Not the default 180 s, which divides the 15 min re-wake: a wake's re-wake alarm and the
// budget's refill timer then fall due within a millisecond of each other. The time-skipping
// server fires the second while the task woken by the first is with the worker, refuses that
// task's completion (it cancels the fired timer) and strands the run; a real server takes it.
const refillMs = 170_000;
const dmReserve = 5;

let h: WorkflowHarness;
beforeAll(async () => {
  h = await WorkflowHarness.start('fcm-budget', {
    fcm: true,
    env: { PUSH_FCM_WAKE_BURST: String(burst), PUSH_FCM_WAKE_REFILL_MS: String(refillMs), PUSH_FCM_DM_RESERVE: String(dmReserve) },
  });
});
afterAll(async () => {
  await h?.close();
});
beforeEach(async () => {
  await h.reset();
});

interface Wake {
  readonly at: number;
  readonly priority: 'HIGH' | 'NORMAL';
}

/**
 * A server-channel message every 5 s for `durationMs`; the phone drains each wake as soon as
 * it sees it (within one step). `dmAt`: a DM at that moment of the traffic. Returns every wake
 * with its claim time (workflow clock) and when the DM was posted.
 */
async function busyChannel(
  device: Device,
  durationMs: number,
  dmAt?: number,
): Promise<{ wakes: Wake[]; start: number; dmPostedAt: number | undefined }> {
  const stepMs = 5_000;
  const wakes: Wake[] = [];
  const record = async () => {
    const requests = h.wakes(device) as FcmRequestRecord[];
    if (requests.length === wakes.length) return;
    const row = await h.row(device);
    for (const request of requests.slice(wakes.length)) wakes.push({ at: row!.last_woken_at!.getTime(), priority: request.priority! });
    await h.drain(device);
  };
  await h.message(device, 10);
  await h.untilWakes(device, 1);
  const start = (await h.row(device))!.last_woken_at!.getTime();
  let dmPostedAt: number | undefined;
  for (let elapsed = 0; elapsed < durationMs; elapsed += stepMs) {
    await record();
    if (dmAt !== undefined && elapsed === dmAt) {
      dmPostedAt = await h.env.currentTimeMs();
      await h.message(device, 20, true);
    }
    await h.message(device, 10 + ((elapsed / stepMs) % 3));
    await h.skip(stepMs);
  }
  await record();
  return { wakes, start, dmPostedAt };
}

describe('the FCM wake budget', () => {
  it('holds an hour of server-channel chatter to burst − reserve + elapsed ÷ refill wakes, and a DM at minute 40 still wakes within the interval', async () => {
    const device = await h.registerDevice({ transport: 'fcm' });
    const hour = 3_600_000;
    const { wakes, start, dmPostedAt } = await busyChannel(device, hour, 40 * 60_000);
    const inTheHour = wakes.filter((w) => w.at < start + hour);
    const normal = inTheHour.filter((w) => w.priority === 'NORMAL');
    expect(normal.length).toBeLessThanOrEqual(burst - dmReserve + Math.floor(hour / refillMs));
    // Held back, not lost: the budget is what limits, so it is used up to its allowance.
    expect(normal.length).toBeGreaterThanOrEqual(burst - dmReserve + Math.floor(hour / refillMs) - 2);
    const dm = inTheHour.find((w) => w.priority === 'HIGH');
    expect(dm, 'the DM got a high-priority wake').toBeDefined();
    expect(dm!.at - dmPostedAt!).toBeLessThanOrEqual(minIntervalMs);
    // FCM never saw more than the budget: every request is one of these wakes.
    expect(h.google!.fcm.received.filter((r) => r.token === device.endpoint)).toHaveLength(wakes.length);
    expect(h.google!.fcm.problems).toEqual([]);
  }, 600_000);

  it('wakes the held-back rows once the chatter stops', async () => {
    const device = await h.registerDevice({ transport: 'fcm' });
    const { wakes } = await busyChannel(device, 10 * 60_000);
    expect(wakes.length).toBeLessThan((10 * 60_000) / minIntervalMs); // the budget held some back
    await h.message(device, 10); // the last message of the chatter, its row pending
    const held = await h.until(device, 'held back by the budget', (s) => s.nextTimer?.reason === 'budget');
    expect(held.budget).toMatchObject({ burst, leftForServerChannels: 0 });
    await h.skipTo(Date.parse(held.nextTimer!.at));
    await h.untilWakes(device, wakes.length + 1);
    expect((h.wakes(device).at(-1) as FcmRequestRecord).priority).toBe('NORMAL');
    await h.drain(device);
    expect(await h.drain(device)).toBe(0);
  }, 300_000);

  it('with PUSH_FCM_WAKE_BURST=0 behaves as before the budget: a busy channel reaches the design ceiling', async () => {
    await h.restartWorker({ PUSH_FCM_WAKE_BURST: '0' });
    try {
      const device = await h.registerDevice({ transport: 'fcm', continueAsNewAfterWakes: 40 });
      const hour = 3_600_000;
      const { wakes, start } = await busyChannel(device, hour + 5_000);
      const inTheHour = wakes.filter((w) => w.at < start + hour);
      expect(inTheHour.length).toBeGreaterThanOrEqual(239);
      expect(inTheHour.length).toBeLessThanOrEqual(240);
      for (let i = 1; i < wakes.length; i++) expect(wakes[i]!.at - wakes[i - 1]!.at).toBeGreaterThanOrEqual(minIntervalMs);
      expect((await h.row(device))?.fcm_budget_tat).toBeNull();
      expect((await h.state(device)).budget).toBeNull();
    } finally {
      await h.reset();
      await h.restartWorker({ PUSH_FCM_WAKE_BURST: String(burst) });
    }
  }, 600_000);

  it('shows the budget left in the state query', async () => {
    const device = await h.registerDevice({ transport: 'fcm' });
    await h.message(device, 10);
    await h.untilWakes(device, 1);
    await waitFor('a budget in the state', async () => (await h.state(device)).budget ?? undefined, 20_000);
    expect((await h.state(device)).budget).toEqual({ burst, left: burst - 1, leftForServerChannels: burst - dmReserve - 1, refillMs, dmReserve });
  });
});

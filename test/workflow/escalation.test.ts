/**
 * Escalation on the time-skipping server, with the real claim SQL and real wakes: a DM — a
 * call's ring — that arrives behind an undrained server-channel wake gets one high-priority
 * wake as soon as the minimum interval allows, not at the re-wake. A phone in Doze holds the
 * normal wake for hours; the DM must not wait behind it.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { FcmRequestRecord } from '../../devstack/stand-ins/fcm.js';
import type { DistributorMessage } from '../../simulator/distributor.js';
import { minIntervalMs, rewakeAfterMs, WorkflowHarness, type Device } from '../support/workflow-harness.js';

const burst = 6;
const dmReserve = 2;

let h: WorkflowHarness;
beforeAll(async () => {
  h = await WorkflowHarness.start('escalation', {
    fcm: true,
    env: { PUSH_FCM_WAKE_BURST: String(burst), PUSH_FCM_WAKE_REFILL_MS: '180000', PUSH_FCM_DM_RESERVE: String(dmReserve) },
  });
});
afterAll(async () => {
  await h?.close();
});
beforeEach(async () => {
  await h.reset();
});

/** The claim time (workflow clock) of the device's last wake. */
async function lastClaim(device: Device): Promise<number> {
  return (await h.row(device))!.last_woken_at!.getTime();
}

function urgencies(device: Device): string[] {
  return h.wakes(device).map((w) => ('urgency' in w ? (w as DistributorMessage).urgency! : (w as FcmRequestRecord).priority!.toLowerCase()));
}

/** A server-channel message woken at normal priority, never drained (the phone is in Doze). */
async function undrainedChannelWake(device: Device): Promise<number> {
  await h.message(device, 10);
  await h.untilWakes(device, 1);
  expect(urgencies(device)).toEqual(['normal']);
  return lastClaim(device);
}

describe('escalation', () => {
  it('a DM 5 s after an undrained normal wake gets a high wake when the interval ends', async () => {
    const device = await h.registerDevice();
    const first = await undrainedChannelWake(device);
    await h.skipTo(first + 5_000);
    await h.message(device, 20, true);
    await h.until(device, 'the escalation planned', (s) => s.nextTimer?.reason === 'interval' || s.nextTimer?.reason === 'escalation');
    await h.skipTo(first + minIntervalMs - 1_000);
    expect(h.wakes(device)).toHaveLength(1); // never sooner than the interval
    await h.skipTo(first + minIntervalMs);
    await h.untilWakes(device, 2);
    expect(urgencies(device)).toEqual(['normal', 'high']);
    const second = await lastClaim(device);
    expect(second - first).toBeGreaterThanOrEqual(minIntervalMs);
    expect(second - first).toBeLessThan(2 * minIntervalMs); // the interval's end, not the re-wake
    expect(h.distributor.problems).toEqual([]);
  });

  it('a DM after the interval escalates at once; a second DM adds nothing until the re-wake', async () => {
    const device = await h.registerDevice();
    const first = await undrainedChannelWake(device);
    await h.skipTo(first + 60_000);
    const posted = await h.env.currentTimeMs();
    await h.message(device, 20, true);
    await h.untilWakes(device, 2);
    expect(urgencies(device)).toEqual(['normal', 'high']);
    const escalated = await lastClaim(device);
    expect(escalated - posted).toBeLessThan(minIntervalMs);
    // A high wake is outstanding now: further DMs, and chatter, wait for the drain or the re-wake.
    await h.skip(minIntervalMs);
    await h.message(device, 21, true);
    await h.message(device, 11);
    await h.skipTo(escalated + rewakeAfterMs - 5_000);
    expect(h.wakes(device)).toHaveLength(2);
    await h.skipTo(escalated + rewakeAfterMs);
    await h.untilWakes(device, 3);
    expect(urgencies(device)).toEqual(['normal', 'high', 'high']);
    expect((await lastClaim(device)) - escalated).toBeGreaterThanOrEqual(rewakeAfterMs);
  });

  it('after the drain, a DM wakes as it always did (nothing outstanding to escalate)', async () => {
    const device = await h.registerDevice();
    const first = await undrainedChannelWake(device);
    await h.drain(device);
    await h.skipTo(first + 30_000);
    await h.message(device, 20, true);
    await h.untilWakes(device, 2);
    expect(urgencies(device)).toEqual(['normal', 'high']);
  });

  it('a DM behind an undrained wake escalates even with the FCM budget down to its reserve', async () => {
    const device = await h.registerDevice({ transport: 'fcm' });
    // Chatter spends the budget down to the DM reserve: burst − reserve normal wakes, each drained.
    for (let i = 0; i < burst - dmReserve; i++) {
      await h.message(device, 10);
      await h.untilWakes(device, i + 1);
      if (i < burst - dmReserve - 1) await h.drain(device);
      await h.skip(minIntervalMs);
    }
    expect((await h.state(device)).budget).toMatchObject({ leftForServerChannels: 0, left: dmReserve });
    const normalWakes = h.wakes(device).length;
    await h.message(device, 20, true);
    await h.skip(minIntervalMs);
    await h.untilWakes(device, normalWakes + 1);
    expect(urgencies(device).at(-1)).toBe('high');
    expect(
      urgencies(device)
        .slice(0, normalWakes)
        .every((u) => u === 'normal'),
    ).toBe(true);
    // The provider collapses the two wakes: both carry the one collapse key.
    const lastBody = JSON.parse((h.wakes(device).at(-1) as FcmRequestRecord).body) as { message: { android: { collapse_key: string } } };
    expect(lastBody.message.android.collapse_key).toBe('wake');
    expect(h.google!.fcm.problems).toEqual([]);
  });
});

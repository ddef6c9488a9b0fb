/**
 * Outages on our side never cost a user their registration, and rate limits are
 * honoured without counting them as failures: the registration workflow on the
 * time-skipping server, the real claim and send activities, the real transports and the
 * worker's outage loop, against a fake Google and a fake distributor on loopback that fail as
 * scripted for hours of workflow time.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../devstack/daemons.js';
import { startServer } from '../../simulator/loopback-server.js';
import { fcmError, type FcmAnswer } from '../../devstack/stand-ins/fcm.js';
import { maxConsecutiveFailures } from '../../domain/backoff.js';
import { minIntervalMs, rewakeAfterMs, WorkflowHarness, type Device } from '../support/workflow-harness.js';
import type { TransportName } from '../../domain/vocabulary.js';

let h: WorkflowHarness;
beforeAll(async () => {
  h = await WorkflowHarness.start('outages', { fcm: true });
});
afterAll(async () => {
  await h?.close();
});
beforeEach(async () => {
  await h.reset();
});

const hour = 3_600_000;

/** Devices that were each woken once (the provider worked), drained, then given a new message. */
async function devicesWithAMessage(count: number, options: { transport: TransportName }): Promise<Device[]> {
  const devices: Device[] = [];
  for (let i = 0; i < count; i++) devices.push(await h.registerDevice({ transport: options.transport }));
  for (const device of devices) await h.message(device, 10);
  for (const device of devices) await h.untilDelivered(device, 1);
  for (const device of devices) await h.drain(device);
  // Past the detector's window of these deliveries: what follows is judged on its own.
  await h.skip(2 * 60_000);
  return devices;
}

/** Lets `ms` of workflow time pass in steps (the back-offs, probes and timers run as they fall due). */
async function passTime(ms: number, stepMs = 5 * 60_000): Promise<void> {
  for (let passed = 0; passed < ms; passed += stepMs) await h.skip(stepMs);
}

/** After the provider recovered: every device gets its wake, long before the re-wake would. */
async function expectAllWokenPromptly(devices: readonly Device[], deliveredBefore: number): Promise<void> {
  const recoveredAt = await h.env.currentTimeMs();
  for (let step = 0; step < 40 && !devices.every((d) => h.delivered(d).length > deliveredBefore); step++) await h.skip(15_000);
  for (const device of devices) await h.untilDelivered(device, deliveredBefore + 1);
  expect((await h.env.currentTimeMs()) - recoveredAt).toBeLessThan(rewakeAfterMs / 2);
}

async function failures(devices: readonly Device[]): Promise<number[]> {
  return Promise.all(devices.map(async (d) => (await h.row(d))?.failures ?? -1));
}

describe('FCM failing for everyone', () => {
  const answers: Array<[string, FcmAnswer]> = [
    ['503 UNAVAILABLE with Retry-After: 5', fcmError('UNAVAILABLE', { headers: { 'retry-after': '5' } })],
    ['503 UNAVAILABLE without Retry-After', fcmError('UNAVAILABLE')],
  ];

  it.each(answers)(
    'answering %s for three hours: no registration pruned, every device woken once FCM is back',
    async (_name, answer) => {
      const devices = await devicesWithAMessage(4, { transport: 'fcm' });
      h.google!.fcm.answerAll(answer);
      for (const device of devices) await h.message(device, 11);
      await passTime(3 * hour);
      expect(await h.kept(devices)).toBe(devices.length);
      // At most the failure that found the outage was counted; nothing after it.
      for (const count of await failures(devices)) expect(count).toBeLessThanOrEqual(1);
      const failed = h.google!.fcm.received.filter((r) => r.answered === 503).length;
      h.google!.fcm.answerAll(undefined);
      await expectAllWokenPromptly(devices, 1);
      for (const count of await failures(devices)) expect(count).toBe(0);
      // The outage was probed, not hammered: a few requests a minute across all devices at most.
      expect(failed).toBeLessThan((3 * hour) / 15_000);
    },
    300_000,
  );

  it('on a quiet instance: once a probe is delivered after FCM recovers, every device held back is woken within the interval', async () => {
    // A handful of devices and two minutes of outage: the detector's window still holds their
    // failures when FCM recovers, so the end takes two probes, and nothing else is sent.
    const devices = await devicesWithAMessage(5, { transport: 'fcm' });
    h.google!.fcm.answerAll(fcmError('UNAVAILABLE'));
    for (const device of devices) await h.message(device, 11, true);
    await passTime(2 * 60_000, 30_000);
    expect(h.transports.detector.outages()).not.toEqual([]);
    h.google!.fcm.answerAll(undefined);
    const before = devices.map((d) => h.delivered(d).length);
    const wokenAt = new Map<Device, number>();
    for (let step = 0; step < 150 && wokenAt.size < devices.length; step++) {
      await h.skip(2_000);
      const now = await h.env.currentTimeMs();
      for (const [i, device] of devices.entries()) if (!wokenAt.has(device) && h.delivered(device).length > before[i]!) wokenAt.set(device, now);
    }
    expect(wokenAt.size).toBe(devices.length);
    const times = [...wokenAt.values()];
    expect(Math.max(...times) - Math.min(...times)).toBeLessThanOrEqual(minIntervalMs);
  }, 300_000);

  it('its OAuth token endpoint down for three hours: no registration pruned, every device woken after', async () => {
    const devices = await devicesWithAMessage(3, { transport: 'fcm' });
    h.google!.oauth.revokeAll(); // FCM refuses the cached token: a new one must be fetched
    h.google!.oauth.answerAll({ status: 503 });
    for (const device of devices) await h.message(device, 11);
    await passTime(3 * hour);
    expect(await h.kept(devices)).toBe(devices.length);
    expect(await failures(devices)).toEqual(devices.map(() => 0));
    h.google!.oauth.answerAll(undefined);
    await expectAllWokenPromptly(devices, 1);
  }, 300_000);

  it('unreachable from the worker (FCM_ENDPOINT on a closed port) for three hours: no registration pruned', async () => {
    const closed = await startServer(() => undefined);
    await closed.close();
    await h.restartWorker({ FCM_ENDPOINT: closed.url });
    try {
      const devices: Device[] = [];
      for (let i = 0; i < 3; i++) devices.push(await h.registerDevice({ transport: 'fcm' }));
      for (const device of devices) await h.message(device, 10);
      await passTime(3 * hour);
      expect(await h.kept(devices)).toBe(devices.length);
      expect(await failures(devices)).toEqual(devices.map(() => 0));
      // Backed off again and again, never counted.
      for (const device of devices) expect((await h.row(device))?.backoff_count).toBeGreaterThanOrEqual(3);
    } finally {
      await h.reset();
      await h.restartWorker(h.google!.env);
    }
  }, 300_000);
});

describe('UnifiedPush: the endpoint or its origin?', () => {
  it('one endpoint answering 503 while the other endpoints of its origin answer 201: pruned after ten', async () => {
    const [bad, ...good] = await devicesWithAMessage(4, { transport: 'unifiedpush' });
    h.distributor.answerFor(bad!.endpoint, { status: 503 });
    for (let round = 0; round < 60 && (await h.row(bad!)) !== null; round++) {
      for (const device of [bad!, ...good]) await h.message(device, 20 + round);
      await h.skip(5 * 60_000);
      for (const device of good) if (h.delivered(device).length > 0) await h.drain(device);
    }
    expect(await h.row(bad!)).toBeNull();
    expect(h.wakes(bad!).filter((m) => m.answered === 503)).toHaveLength(maxConsecutiveFailures);
    expect(await h.finish(bad!)).toMatchObject({ ended: 'registration-deleted' });
    expect(await h.kept(good)).toBe(good.length);
  }, 300_000);

  it("a quiet origin: two dead endpoints failing hold back nobody else's DM, and are pruned after ten", async () => {
    const [first, second] = [await h.registerDevice(), await h.registerDevice()];
    const friend = await h.registerDevice();
    for (const dead of [first!, second!]) h.distributor.answerFor(dead.endpoint, { status: 503 });
    for (const dead of [first!, second!]) await h.message(dead, 10);
    for (const dead of [first!, second!]) await h.untilWakes(dead, 1);
    // Their back-offs run out and they try again: the origin's only recent traffic is theirs.
    await h.skip(11_000);
    await waitFor('a dead endpoint tried again', async () => h.wakes(first!).length + h.wakes(second!).length >= 3, 20_000);
    // Another user's DM on the same distributor goes out at once, without waiting for any
    // back-off or probe (the workflow clock stands still while the test waits).
    await h.message(friend, 20, true);
    await h.untilDelivered(friend, 1);
    expect(await h.row(friend)).toMatchObject({ failures: 0, backoff_until: null });
    // The two dead endpoints are two dead endpoints: ten failures each, then pruned.
    for (let round = 0; round < 40 && (await h.kept([first!, second!])) > 0; round++) {
      for (const dead of [first!, second!]) await h.message(dead, 30 + round);
      await h.skip(5 * 60_000);
    }
    expect(await h.kept([first!, second!])).toBe(0);
    for (const dead of [first!, second!]) expect(h.wakes(dead).filter((m) => m.answered === 503)).toHaveLength(maxConsecutiveFailures);
  }, 300_000);

  it('a whole origin answering 503 for three hours: no registration pruned, every device woken after', async () => {
    const devices = await devicesWithAMessage(4, { transport: 'unifiedpush' });
    h.distributor.answerAll({ status: 503 });
    for (const device of devices) await h.message(device, 11);
    await passTime(3 * hour);
    expect(await h.kept(devices)).toBe(devices.length);
    for (const count of await failures(devices)) expect(count).toBeLessThanOrEqual(1);
    h.distributor.answerAll(undefined);
    await expectAllWokenPromptly(devices, 1);
  }, 300_000);

  it('a self-hosted origin that died for good (connection refused), its only device: pruned after ten while others are delivered', async () => {
    const closed = await startServer(() => undefined);
    await closed.close();
    const dead = await h.registerDevice({ endpoint: `${closed.url}/up/gone` });
    const alive = await h.registerDevice();
    for (let round = 0; round < 60 && (await h.row(dead)) !== null; round++) {
      await h.message(dead, 30 + round);
      await h.message(alive, 30 + round);
      await h.skip(5 * 60_000);
      if (h.delivered(alive).length > 0) await h.drain(alive);
    }
    expect(await h.row(dead)).toBeNull();
    expect(await h.kept([alive])).toBe(1);
  }, 300_000);
});

describe('rate limits (UnifiedPush 429)', () => {
  /** Claim times (workflow clock) of every request the device got, waiting for each. */
  async function requestTimes(device: Device, durationMs: number): Promise<number[]> {
    const times: number[] = [];
    for (let passed = 0; passed < durationMs; passed += 60_000) {
      const before = h.wakes(device).length;
      await h.skip(60_000);
      if (h.wakes(device).length > before) times.push((await h.row(device))!.last_woken_at!.getTime());
    }
    return times;
  }

  it('429 with Retry-After: 600 for an hour: no request before each 600 s is up, never a failure, woken after', async () => {
    const device = await h.registerDevice();
    h.distributor.answerFor(device.endpoint, { status: 429, headers: { 'retry-after': '600' } });
    await h.message(device, 10);
    await h.untilWakes(device, 1);
    const times = [(await h.row(device))!.last_woken_at!.getTime(), ...(await requestTimes(device, hour))];
    expect(times.length).toBeGreaterThanOrEqual(6);
    for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(600_000);
    expect((await h.row(device))?.failures).toBe(0);
    const state = await h.state(device);
    expect(state.backoff).toMatchObject({ reason: 'UnifiedPush 429: rate limited' });
    h.distributor.answerFor(device.endpoint, undefined);
    await h.skip(600_000);
    await h.untilDelivered(device, 1);
    expect(await h.row(device)).toMatchObject({ failures: 0, backoff_until: null, backoff_count: 0 });
  }, 300_000);

  it('429 without Retry-After for an hour: a growing back-off capped at the re-wake interval, never a failure, woken after', async () => {
    const device = await h.registerDevice();
    h.distributor.answerFor(device.endpoint, { status: 429 });
    await h.message(device, 10);
    await h.untilWakes(device, 1);
    const times = [(await h.row(device))!.last_woken_at!.getTime(), ...(await requestTimes(device, hour))];
    const gaps = times.slice(1).map((t, i) => t - times[i]!);
    expect(gaps.length).toBeGreaterThanOrEqual(4);
    for (let i = 1; i < gaps.length; i++) expect(gaps[i]!).toBeGreaterThanOrEqual(gaps[i - 1]! - 1_000);
    expect(gaps[0]!).toBeGreaterThanOrEqual(60_000);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(rewakeAfterMs + minIntervalMs);
    expect((await h.row(device))?.failures).toBe(0);
    h.distributor.answerFor(device.endpoint, undefined);
    await h.skip(rewakeAfterMs);
    await h.untilDelivered(device, 1);
  }, 300_000);
});

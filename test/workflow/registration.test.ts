/**
 * The registration workflow's rules (docs/design.md, Wakes), one test per rule, on the time-skipping test
 * server with the real claim SQL on PostgreSQL and real wakes to a fake distributor.
 */
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { sql } from 'slonik';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { signalDrained, signalRegistered } from '../../temporal/registration-workflows.js';
import { minIntervalMs, rewakeAfterMs, WorkflowHarness, type Device } from '../support/workflow-harness.js';

let h: WorkflowHarness;
beforeAll(async () => {
  h = await WorkflowHarness.start('registration');
});
afterAll(async () => {
  await h?.close();
});
beforeEach(async () => {
  await h.reset();
});

/**
 * The gap between two wakes (claim times, workflow clock): at least `ms`, and woken by that
 * timer — not by anything later, which the design puts at least another interval away. The
 * claim's workflow time includes the task's scheduling, which a loaded machine stretches past
 * a second, so the bound is that next interval, not a latency.
 */
function expectGap(gap: number, ms: number): void {
  expect(gap).toBeGreaterThanOrEqual(ms);
  expect(gap).toBeLessThan(ms + minIntervalMs);
}

const lastWake = async (device: Parameters<WorkflowHarness['state']>[0]) => Date.parse((await h.state(device)).lastWokenAt ?? 'NaN');

describe('registration workflow', () => {
  it('wakes once for a server-channel message at normal priority, with the constant wake', async () => {
    const device = await h.registerDevice();
    await h.message(device, 10);
    const [wake] = await h.untilWakes(device, 1);
    expect(wake).toMatchObject({
      urgency: 'normal',
      ttl: '3600',
      topic: 'wake',
      contentEncoding: 'aes128gcm',
      plaintext: '{"v":"1","t":"wake"}',
      problems: [],
    });
    expect(await h.row(device)).toMatchObject({ wake_outstanding: true, failures: 0 });
  });

  it('wakes at high priority when a DM is among the pending rows', async () => {
    const device = await h.registerDevice();
    await h.message(device, 10, false, { signal: false });
    await h.message(device, 20, true, { signal: false });
    await h.handle(device).signal('pending');
    const [wake] = await h.untilWakes(device, 1);
    expect(wake).toMatchObject({ urgency: 'high', problems: [] });
  });

  it('keeps at least the minimum interval between wakes, even after a drain', async () => {
    const device = await h.registerDevice();
    await h.message(device, 10);
    await h.untilWakes(device, 1);
    const first = await lastWake(device);
    await h.drain(device);
    await h.message(device, 10);
    // The workflow learns of the drain from its next look, which the new message's signal asks
    // for as soon as the interval allows.
    await h.until(device, 'the new message seen', (s) => s.nextTimer?.reason === 'interval');
    await h.skipTo(first + minIntervalMs - 2_000);
    expect(h.wakes(device)).toHaveLength(1);
    await h.skip(2_000);
    await h.untilWakes(device, 2);
    expectGap((await lastWake(device)) - first, minIntervalMs);
  });

  it('wakes a message that arrives inside the interval when the interval ends', async () => {
    const device = await h.registerDevice();
    await h.message(device, 10);
    await h.untilWakes(device, 1);
    const first = await lastWake(device);
    await h.drain(device);
    await h.skip(5_000);
    await h.message(device, 30, true);
    await h.until(device, 'the interval timer armed', (s) => s.nextTimer?.reason === 'interval');
    await h.skip(minIntervalMs);
    const wakes = await h.untilWakes(device, 2);
    expect(wakes[1]!.urgency).toBe('high');
    expectGap((await lastWake(device)) - first, minIntervalMs);
  });

  it('re-wakes after 15 minutes only while undrained and pending, and never after a drain', async () => {
    const device = await h.registerDevice();
    await h.message(device, 10);
    await h.untilWakes(device, 1);
    const first = await lastWake(device);
    // A `pending` signal that overlapped the claim asks for one more look at the interval.
    await h.skip(minIntervalMs);
    const state = await h.until(device, 'waiting for the re-wake', (s) => s.nextTimer?.reason === 'rewake');
    expect(state.nextTimer).toMatchObject({ reason: 'rewake', at: new Date(first + rewakeAfterMs).toISOString() });
    await h.skipTo(first + rewakeAfterMs - 2_000);
    expect(h.wakes(device)).toHaveLength(1);
    await h.skip(2_000);
    await h.untilWakes(device, 2);
    expectGap((await lastWake(device)) - first, rewakeAfterMs);
    await h.drain(device);
    // The next re-wake's look finds the drain and nothing pending: no wake, and then no timer.
    await h.skip(3 * rewakeAfterMs);
    expect(h.wakes(device)).toHaveLength(2);
    expect(await h.state(device)).toMatchObject({ outstanding: false, nextTimer: null, rewakeAlarm: null });
  });

  it('holds no timer at all when idle: nothing pending, nothing outstanding', async () => {
    const device = await h.registerDevice();
    await h.message(device, 10);
    await h.untilWakes(device, 1);
    await h.drain(device);
    await h.skip(minIntervalMs); // a signal that overlapped the claim asks for one more look
    const idle = await h.until(device, 'idle', (s) => !s.outstanding && s.nextTimer === null);
    expect(idle.checkRequested).toBe(false);
    await h.skip(24 * 3_600_000);
    expect(h.wakes(device)).toHaveLength(1);
    expect((await h.state(device)).nextTimer).toBeNull();
  });

  it('gives an hour of continuous traffic with instant drains between 239 and 240 wakes, across runs', async () => {
    // Continuing as new every 40 wakes keeps each replay short and puts six run boundaries
    // inside the hour: none of them may cost a wake or break the interval.
    const device = await h.registerDevice({ continueAsNewAfterWakes: 40 });
    const stepMs = 5_000; // one message every 5 s: busier than one per 15 s
    await h.message(device, 10);
    await h.untilWakes(device, 1);
    const wakeTimes = [(await h.row(device))!.last_woken_at!.getTime()];
    const start = wakeTimes[0]!;
    for (let elapsed = 0; elapsed < 3_600_000 + stepMs; elapsed += stepMs) {
      // The phone drains each wake as soon as it sees it (within one step); messages keep coming.
      if (h.wakes(device).length > wakeTimes.length - 1) {
        if (h.wakes(device).length > wakeTimes.length) wakeTimes.push((await h.row(device))!.last_woken_at!.getTime());
        await h.drain(device);
      }
      await h.message(device, 10 + ((elapsed / stepMs) % 3), elapsed % 60_000 === 0);
      await h.skip(stepMs);
    }
    const description = await h.handle(device).describe();
    expect(description.runId, 'the device went through several runs').not.toBe(description.raw.workflowExecutionInfo?.firstRunId);
    expect((await h.state(device)).wakesThisRun).toBeLessThan(40);
    const inTheHour = wakeTimes.filter((t) => t < start + 3_600_000);
    expect(inTheHour.length).toBeGreaterThanOrEqual(239);
    expect(inTheHour.length).toBeLessThanOrEqual(240);
    // Never two wakes closer than the minimum interval (last_woken_at is the workflow's clock).
    for (let i = 1; i < wakeTimes.length; i++) expect(wakeTimes[i]! - wakeTimes[i - 1]!).toBeGreaterThanOrEqual(minIntervalMs);
  }, 600_000);
});

describe('signal orderings around a drain (PostgreSQL is the truth, signals are hints)', () => {
  it('pending before drained: the new message is woken when the interval ends', async () => {
    const device = await h.registerDevice();
    await h.message(device, 10);
    await h.untilWakes(device, 1);
    // The drain commits, a new message arrives and its `pending` signal overtakes `drained`.
    await h.drain(device, { signal: false });
    await h.message(device, 11);
    await h.until(device, 'pending seen while outstanding', (s) => s.outstanding && s.checkRequested);
    await h.drain(device, { signal: true }); // the late `drained` (its drain finds the new row too)
    await h.message(device, 12);
    await h.skip(minIntervalMs);
    await h.untilWakes(device, 2);
  });

  it('duplicate signals cause one wake', async () => {
    const device = await h.registerDevice();
    await h.message(device, 10);
    await Promise.all([1, 2, 3].map(() => h.handle(device).signal('pending')));
    await h.untilWakes(device, 1);
    await h.skip(minIntervalMs * 2);
    await h.drain(device);
    await h.drain(device);
    await h.skip(rewakeAfterMs * 2);
    expect(h.wakes(device)).toHaveLength(1);
  });

  it('a drained signal that never arrives: the next message is still woken at once', async () => {
    const device = await h.registerDevice();
    await h.message(device, 10);
    await h.untilWakes(device, 1);
    const first = await lastWake(device);
    await h.skip(minIntervalMs);
    await h.until(device, 'waiting for the re-wake', (s) => s.outstanding && s.nextTimer?.reason === 'rewake');
    await h.drain(device, { signal: false });
    // The workflow still believes the wake outstanding; the new message's `pending` signal
    // makes it ask PostgreSQL once (the interval is over): drained and pending, so it claims.
    const posted = await h.env.currentTimeMs();
    await h.message(device, 11);
    await h.untilWakes(device, 2);
    const second = await lastWake(device);
    expect(second - posted).toBeLessThan(minIntervalMs);
    expect(second - first).toBeLessThan(rewakeAfterMs);
  });

  it('a drained signal that never arrives, a message inside the interval: woken when the interval ends', async () => {
    const device = await h.registerDevice();
    await h.message(device, 10);
    await h.untilWakes(device, 1);
    const first = await lastWake(device);
    await h.drain(device, { signal: false });
    await h.message(device, 11, true);
    await h.until(device, 'a look planned at the interval', (s) => s.outstanding && s.nextTimer?.reason === 'interval');
    await h.skipTo(first + minIntervalMs);
    const wakes = await h.untilWakes(device, 2);
    expect(wakes[1]!.urgency).toBe('high');
    expectGap((await lastWake(device)) - first, minIntervalMs);
  });

  it('sends the wake of a claim whose workflow task was lost, instead of waiting for the re-wake', async () => {
    // What a worker killed between the claim and the end of its workflow task leaves: the
    // claim in PostgreSQL (outstanding, last_woken_at = that task's time), nothing in the
    // history. The retried task claims again at its own, later time, which does not match.
    const device = await h.registerDevice();
    await h.until(device, 'the first look done', (s) => !s.checkRequested && s.nextTimer === null);
    const lostClaimAt = await h.env.currentTimeMs();
    await h.db.pool.query(sql.unsafe`
      UPDATE push_registrations SET wake_outstanding = true, last_woken_at = ${new Date(lostClaimAt).toISOString()}
      WHERE user_id = ${device.userId} AND device_id = ${device.deviceId}`);
    await h.message(device, 10, true);
    const [wake] = await h.untilWakes(device, 1);
    expect(wake).toMatchObject({ urgency: 'high', problems: [] });
    // The claim is adopted as it stands: no second claim, and the re-wake counts from it.
    expect((await h.row(device))?.last_woken_at?.getTime()).toBe(lostClaimAt);
    const state = await h.until(device, 'waiting for the re-wake', (s) => s.outstanding && s.nextTimer?.reason === 'rewake');
    expect(Date.parse(state.nextTimer!.at)).toBe(lostClaimAt + rewakeAfterMs);
    expect(h.wakes(device)).toHaveLength(1);
  });

  it('a late drained signal (from an api before the lean plan) leaves the newer wake and its re-wake alone', async () => {
    const device = await h.registerDevice();
    await h.message(device, 10);
    await h.untilWakes(device, 1);
    // The drain commits without a signal; the next message is woken by a new claim.
    await h.drain(device, { signal: false });
    await h.skip(minIntervalMs);
    await h.message(device, 11);
    await h.untilWakes(device, 2);
    const second = await lastWake(device);
    // Only now does the first drain's signal arrive: it says nothing about the second wake.
    await signalDrained(h.client, device);
    await h.until(device, 'the second wake still outstanding', (s) => s.outstanding && s.rewakeAlarm !== null);
    await h.skipTo(second + rewakeAfterMs);
    await h.untilWakes(device, 3);
    expectGap((await lastWake(device)) - second, rewakeAfterMs);
  });

  it('a message whose pending signal was lost is woken by the next signal of any kind', async () => {
    const device = await h.registerDevice();
    await h.message(device, 10, false, { signal: false });
    await h.skip(minIntervalMs);
    await h.message(device, 11);
    await h.untilWakes(device, 1);
  });
});

describe('lifecycle', () => {
  /** The first wake's history: its patch markers, local activity markers and search attribute upserts. */
  async function firstWakeHistory(device: Device) {
    await h.message(device, 10);
    await h.untilWakes(device, 1);
    await h.settle();
    const events = (await h.handle(device).fetchHistory()).events ?? [];
    const markers = events.map((e) => e.markerRecordedEventAttributes).filter((m) => m != null);
    return {
      patches: markers
        .filter((m) => m.markerName === 'core_patch')
        .map((m) => (JSON.parse(Buffer.from(m.details!['patch-data']!.payloads![0]!.data!).toString('utf8')) as { id: string }).id),
      localActivities: markers.filter((m) => m.markerName === 'core_local_activity').length,
      upserts: events.filter((e) => e.upsertWorkflowSearchAttributesEventAttributes != null).length,
    };
  }

  it('begins a run with no patch marker, and claims and sends a wake in one local activity', async () => {
    const device = await h.registerDevice();
    expect(await firstWakeHistory(device)).toEqual({ patches: [], localActivities: 1, upserts: 0 });
    expect(h.distributor.received.filter((m) => m.endpoint === device.endpoint)).toHaveLength(1);
  });

  it("records the lean plan's patches in a run started as earlier starters did, never the middle plan's it replaced", async () => {
    const device = await h.registerDevice({ earlierStarter: true });
    const history = await firstWakeHistory(device);
    expect(history.patches).toEqual(['delivery-control', 'lean-plan']);
    expect(history.localActivities).toBe(2); // the claim, then the send
  });

  it('continues as new with its state, losing no signal sent meanwhile', async () => {
    const device = await h.registerDevice({ continueAsNewAfterWakes: 2 });
    const firstRun = (await h.handle(device).describe()).runId;
    for (let i = 0; i < 3; i++) {
      await h.message(device, 10 + i);
      await h.untilWakes(device, i + 1);
      await h.drain(device);
      await h.message(device, 20 + i); // in flight while the run continues as new
      await h.skip(minIntervalMs);
    }
    await h.untilWakes(device, 4);
    const description = await h.handle(device).describe();
    expect(description.runId).not.toBe(firstRun);
    expect(description.status.name).toBe('RUNNING');
    // The carried state still enforces the interval and the outstanding wake.
    expect(await h.state(device)).toMatchObject({ outstanding: true, nextTimer: { reason: 'rewake' } });
  });

  it('ends, deleting the registration, when the endpoint is dead (410)', async () => {
    const device = await h.registerDevice();
    h.distributor.script({ status: 410 });
    await h.message(device, 10);
    expect(await h.finish(device)).toMatchObject({ ended: 'registration-deleted' });
    expect(await h.row(device)).toBeNull();
  });

  it('ends, deleting the registration, after ten consecutive failures of its endpoint', async () => {
    const device = await h.registerDevice();
    h.distributor.script(...Array.from({ length: 10 }, () => ({ status: 503 })));
    await h.message(device, 10);
    expect(await h.finish(device)).toMatchObject({ ended: 'registration-deleted' });
    expect(await h.row(device)).toBeNull();
    expect(h.wakes(device)).toHaveLength(10);
  });

  it('backs off a rate limit for its Retry-After without counting it, counts a failure, and resets on success', async () => {
    const device = await h.registerDevice();
    h.distributor.script({ status: 429, headers: { 'retry-after': '120' } }, { status: 500 });
    await h.message(device, 10);
    await h.untilWakes(device, 1);
    const first = await lastWake(device);
    await h.skipTo(first + 115_000); // less than 120 s by more than a slow machine's real seconds
    expect(h.wakes(device)).toHaveLength(1);
    expect((await h.row(device))?.failures).toBe(0); // a rate limit is never a failure
    await h.skipTo(first + 120_000);
    await h.untilWakes(device, 2);
    await waitForFailures(device, 1); // the 500 is the endpoint's own (its origin is not in outage)
    await h.skip(60_000);
    await h.untilWakes(device, 3);
    await waitForFailures(device, 0);
  });

  it('a new endpoint after a Retry-After of an hour is woken within the interval, not after the hour', async () => {
    const device = await h.registerDevice();
    h.distributor.script({ status: 429, headers: { 'retry-after': '3600' } });
    await h.message(device, 10, true);
    await h.untilWakes(device, 1);
    const first = await lastWake(device);
    await h.until(device, 'backing off for the hour', (s) => s.nextTimer !== null && Date.parse(s.nextTimer.at) >= first + 3_600_000);
    // The phone moves to a new distributor endpoint, as PUT /api/push/registration stores it.
    const moved = { ...device, endpoint: h.distributor.register() };
    await h.db.pool.query(sql.unsafe`
      UPDATE push_registrations SET token = ${moved.endpoint}, up_p256dh = NULL, up_auth = NULL,
        wake_outstanding = false, backoff_until = NULL, backoff_count = 0
      WHERE user_id = ${device.userId} AND device_id = ${device.deviceId}`);
    await signalRegistered(h.client, h.taskQueue, moved, 'unifiedpush');
    await h.untilWakes(moved, 1);
    expect((await lastWake(device)) - first).toBeLessThan(2 * minIntervalMs);
  });

  it('ends when its registration is deleted, and a later registration starts a new one', async () => {
    const device = await h.registerDevice();
    await h.unregister(device);
    expect(await h.finish(device)).toMatchObject({ ended: 'registration-deleted' });
    const again = await h.registerDevice();
    expect((await h.handle(again).describe()).status.name).toBe('RUNNING');
  });

  it('survives a delete followed at once by a new registration of the same device', async () => {
    const device = await h.registerDevice();
    await h.unregister(device);
    await h.db.pool.query(
      (await import('slonik')).sql.unsafe`
        INSERT INTO push_registrations (user_id, device_id, transport, token) VALUES (${device.userId}, ${device.deviceId}, 'unifiedpush', ${device.endpoint})`,
    );
    await signalRegistered(h.client, h.taskQueue, device, 'unifiedpush').catch((error: unknown) => {
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    });
    await h.message(device, 10);
    await h.untilWakes(device, 1);
    expect((await h.handle(device).describe()).status.name).toBe('RUNNING');
  });
});

async function waitForFailures(device: Parameters<WorkflowHarness['row']>[0], failures: number): Promise<void> {
  const { waitFor } = await import('../../devstack/daemons.js');
  await waitFor(`failures = ${failures}`, async () => (await h.row(device))?.failures === failures, 20_000);
}

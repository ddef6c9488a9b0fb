/**
 * Items 4 and 5 — live traffic in real time through the real api, bridge and worker, with
 * the design's intervals (15 s minimum, 15 min re-wake), and three kinds of device at once:
 *
 *   - busy: a channel with one message per second; every device drains each wake at once
 *     (item 5: signals and wakes per device against the design's ceiling of one wake per 15 s);
 *   - quiet: a channel with one message every 20 s, drained at once — one clean wake → drain
 *     cycle per message (item 4: what a cycle costs Temporal);
 *   - idle: registered, nothing else (item 4: what an idle device costs — no timer expected).
 *
 * Afterwards every device's real history is read and counted (bench/history.ts).
 */
import { sql } from 'slonik';
import { z } from 'zod';
import { settleAll } from '../../src/testing.js';
import { registerAll, settledHistoryLengths, withApi, type ApiDevice } from '../devices.js';
import type { DistributorTap } from '../distributor-tap.js';
import { addCosts, fetchEvents, historyCost, scaleCost, type HistoryCost } from '../history.js';
import type { Report, Section } from '../report.js';
import type { BenchSettings } from '../settings.js';
import { setupProse } from '../setup-prose.js';
import { devicesFor, messageEvent, seedServer, seedUsers, type ServerWorld } from '../seed.js';
import type { BenchStack, RunningApps } from '../stack.js';
import { median, quantile, sleep } from '../stats.js';
import { lineChart } from '../svg.js';
import { jetstream } from '@nats-io/jetstream';

const minIntervalMs = 15_000;
/** docs/architecture.md sizes continue-as-new on "~11 history events per wake". */
const assumedEventsPerWake = 11;

interface Cohort {
  readonly name: 'busy' | 'quiet' | 'idle';
  readonly devices: ApiDevice[];
  readonly world: ServerWorld | undefined;
}

interface DeviceLog {
  wakes: number[];
  drains: number;
  drainFailures: number;
}

/**
 * `meanwhile` runs during the traffic (the run uses it for the worker-memory measurement,
 * which counts bytes, not time, on another worker process and task queue); its failure is its
 * own business.
 */
export async function measureLiveTraffic(
  stack: BenchStack,
  report: Report,
  settings: BenchSettings,
  tap: DistributorTap,
  meanwhile?: { readonly what: string; readonly run: () => Promise<void> },
): Promise<void> {
  const section = report.section('live-traffic', '4–5. Live traffic: a busy channel, wake cycles, idle devices');
  const { durationMs, busyDevices, quietDevices, quietEveryMs, idleDevices } = settings.liveTraffic;
  const busyWorld = await seedServer(stack.pool, { members: busyDevices, channels: 1, distributor: tap.distributor });
  const quietWorld = await seedServer(stack.pool, { members: quietDevices, channels: 1, distributor: tap.distributor });
  const idleUsers = await seedUsers(stack.pool, idleDevices);
  let apps: RunningApps | undefined;
  const logs = new Map<string, DeviceLog>();
  const drainsInFlight = new Set<Promise<void>>();
  let cohorts: Cohort[];
  let t0 = 0;
  let messages: { busy: number; quiet: number };
  try {
    apps = await stack.startApps({ label: 'live', taskQueue: 'bench-live', apps: ['api', 'worker', 'bridge'] });
    const { apiUrl } = apps;
    const api = (devices: Parameters<typeof withApi>[0]) => withApi(devices, apiUrl, stack.jwtSecret);
    cohorts = [
      { name: 'busy', devices: await api(busyWorld.devices), world: busyWorld },
      { name: 'quiet', devices: await api(quietWorld.devices), world: quietWorld },
      { name: 'idle', devices: await api(devicesFor(idleUsers, tap.distributor)), world: undefined },
    ];
    const everyone = cohorts.flatMap((c) => c.devices);
    await registerAll(everyone);
    const baseline = await settledHistoryLengths(
      stack.temporal,
      everyone.map((d) => d.workflowId),
    );
    const byEndpoint = new Map(everyone.map((d) => [d.endpoint, d]));
    for (const d of everyone) logs.set(d.workflowId, { wakes: [], drains: 0, drainFailures: 0 });

    // A woken device drains at once, as the app does.
    tap.listen((message) => {
      const device = byEndpoint.get(message.endpoint);
      if (device === undefined) return;
      const log = logs.get(device.workflowId)!;
      log.wakes.push(Date.now() - t0);
      const drain = device.api.drain().then(
        () => void log.drains++,
        () => void log.drainFailures++,
      );
      drainsInFlight.add(drain);
      void drain.finally(() => drainsInFlight.delete(drain));
    });

    process.stdout.write(`  ${Math.round(durationMs / 1000)} s of traffic in real time…\n`);
    t0 = Date.now();
    const alongside = meanwhile?.run();
    messages = await publishTraffic(stack, busyWorld, quietWorld, durationMs, quietEveryMs);
    await alongside;
    // The last message may wait out the interval before its wake; then every device drains.
    await quiescence(stack, everyone, drainsInFlight, minIntervalMs + 30_000);
    await sleep(1_000);

    const costs = new Map<string, { total: HistoryCost; since: HistoryCost }>();
    await settleAll(everyone, 16, async (d) => {
      const events = await fetchEvents(stack.temporal, d.workflowId);
      costs.set(d.workflowId, { total: historyCost(events), since: historyCost(events.slice(baseline.get(d.workflowId)), events) });
    });
    reportResults(report, section, { cohorts, logs, costs, messages, durationMs, quietEveryMs });
    if (meanwhile !== undefined) {
      section.setup.push(setupProse('live-traffic-meanwhile', { meanwhile: meanwhile.what }));
    }
  } finally {
    tap.listen(undefined);
    await Promise.allSettled([...drainsInFlight]);
    await apps?.stop();
  }
}

/** One busy message per second and one quiet message per `quietEveryMs`, on an absolute schedule. */
async function publishTraffic(stack: BenchStack, busy: ServerWorld, quiet: ServerWorld, durationMs: number, quietEveryMs: number) {
  const js = jetstream(stack.nats);
  const start = Date.now();
  const publish = async (world: ServerWorld) => {
    const message = messageEvent(world.channelIds[0]!, world.ownerId);
    await js.publish(`channel.${world.channelIds[0]}.MESSAGE_CREATE`, message.body, { msgID: `message-${message.id}` });
  };
  let busyCount = 0;
  let quietCount = 0;
  for (let second = 0; second * 1000 < durationMs; second++) {
    const wait = start + second * 1000 - Date.now();
    if (wait > 0) await sleep(wait);
    await publish(busy);
    busyCount++;
    if ((second * 1000) % quietEveryMs === 0) {
      await publish(quiet);
      quietCount++;
    }
    if (second > 0 && second % 60 === 0) process.stdout.write(`  … ${second} s\n`);
  }
  return { busy: busyCount, quiet: quietCount };
}

/** Until no device has a pending row or an outstanding wake and no drain is in flight. */
async function quiescence(stack: BenchStack, devices: readonly ApiDevice[], drains: Set<Promise<void>>, timeoutMs: number): Promise<void> {
  const users = sql.array(
    devices.map((d) => d.userId),
    'int8',
  );
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const busy = await stack.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int4 AS n FROM push_registrations r
      WHERE r.user_id = ANY(${users}) AND (r.wake_outstanding OR EXISTS (SELECT 1 FROM push_pending p WHERE p.registration_id = r.id))`);
    if (busy === 0 && drains.size === 0) return;
    if (Date.now() > deadline) throw new Error(`${busy} devices still had pending rows or an outstanding wake ${timeoutMs} ms after the traffic`);
    await sleep(250);
  }
}

function reportResults(
  report: Report,
  section: Section,
  run: {
    cohorts: Cohort[];
    logs: Map<string, DeviceLog>;
    costs: Map<string, { total: HistoryCost; since: HistoryCost }>;
    messages: { busy: number; quiet: number };
    durationMs: number;
    quietEveryMs: number;
  },
): void {
  const { cohorts, logs, costs, messages, durationMs } = run;
  const cohort = (name: Cohort['name']) => cohorts.find((c) => c.name === name)!.devices;
  const wakes = (d: ApiDevice) => logs.get(d.workflowId)!.wakes.length;
  const since = (d: ApiDevice) => costs.get(d.workflowId)!.since;
  const failures = cohorts.flatMap((c) => c.devices).reduce((a, d) => a + logs.get(d.workflowId)!.drainFailures, 0);
  if (failures > 0) section.setup.push(setupProse('live-traffic-drain-failures', { failures }));

  // Item 5: the busy channel.
  const busy = cohort('busy');
  // The first message wakes at once; then at most one wake per 15 s while messages keep coming.
  const ceilingWakes = 1 + Math.ceil(((messages.busy - 1) * 1000) / minIntervalMs);
  const busyWakes = busy.map(wakes);
  const pendingSignals = busy.map((d) => since(d).signals.pending ?? 0);
  const allSignals = busy.map((d) => Object.values(since(d).signals).reduce((a, b) => a + b, 0));
  // The rate after the first wake, over the traffic's length.
  const perHour = (w: number) => ((w - 1) * 3_600_000) / (messages.busy * 1000);
  const spread = (values: number[]) => `min ${Math.min(...values)}, max ${Math.max(...values)} over ${values.length} devices`;
  report.figure(section, {
    name: `busy channel: wakes per device in ${Math.round(durationMs / 1000)} s of real time, 15 s interval (median)`,
    value: median(busyWakes),
    unit: 'wakes',
    reference: { name: 'design ceiling: 1 + one per 15 s', value: ceilingWakes },
    note: spread(busyWakes),
    headline: '5. busy channel',
  });
  report.figure(section, {
    name: 'busy channel: wakes per device per hour, after the first (median)',
    value: perHour(median(busyWakes)),
    unit: 'wakes/h',
    reference: { name: 'design ceiling', value: 240 },
  });
  report.figure(section, {
    name: 'busy channel: `pending` signals per device (median)',
    value: median(pendingSignals),
    unit: 'signals',
    reference: { name: 'messages in the channel', value: messages.busy },
    note: spread(pendingSignals),
    headline: '5. busy channel',
  });
  report.figure(section, {
    name: 'busy channel: all signals per device (pending + drained), median',
    value: median(allSignals),
    unit: 'signals',
    reference: { name: 'two per wake at the wake ceiling', value: 2 * ceilingWakes },
  });

  // Item 4: costs per wake → drain cycle, and of an idle device.
  const perWake = (devices: ApiDevice[]) =>
    scaleCost(
      addCosts(devices.map(since)),
      devices.reduce((a, d) => a + wakes(d), 0),
    );
  const quiet = cohort('quiet');
  const idle = cohort('idle');
  const quietCycle = perWake(quiet);
  const busyCycle = perWake(busy);
  const idleSince = scaleCost(addCosts(idle.map(since)), idle.length);
  const idleTotal = scaleCost(addCosts(idle.map((d) => costs.get(d.workflowId)!.total)), idle.length);
  const registration = scaleCost(addCosts(quiet.map((d) => subtract(costs.get(d.workflowId)!.total, since(d)))), quiet.length);
  report.figure(section, {
    name: 'history events per wake → drain cycle (quiet channel)',
    value: quietCycle.events,
    unit: 'events',
    reference: { name: 'continue-as-new sizing in architecture.md', value: assumedEventsPerWake },
    headline: '4. Temporal cost',
  });
  report.figure(section, {
    name: 'history events per wake → drain cycle (busy channel)',
    value: busyCycle.events,
    unit: 'events',
    reference: { name: 'continue-as-new sizing in architecture.md', value: assumedEventsPerWake },
  });
  report.figure(section, {
    name: 'billable actions per cycle (quiet channel), estimate',
    value: quietCycle.actions,
    unit: 'actions',
    headline: '4. Temporal cost',
  });
  report.figure(section, {
    name: 'billable actions per cycle (busy channel), estimate',
    value: busyCycle.actions,
    unit: 'actions',
    headline: '4. Temporal cost',
  });
  report.figure(section, {
    name: `idle device: history events in ${Math.round(durationMs / 1000)} s`,
    value: idleSince.events,
    unit: 'events',
    reference: { name: 'design: none', value: 0 },
  });
  report.figure(section, {
    name: 'idle device: timers started, whole history',
    value: idleTotal.timersStarted,
    unit: 'timers',
    reference: { name: 'design: none', value: 0 },
    headline: '4. Temporal cost',
  });

  const row = (label: string, c: HistoryCost) => [
    label,
    c.events,
    c.workflowTasks,
    c.signals.pending ?? 0,
    c.signals.drained ?? 0,
    c.signals.registered ?? 0,
    c.timersStarted,
    c.byType.TimerCanceled ?? 0,
    c.markers,
    c.actions,
  ];
  section.tables.push({
    title: 'Temporal cost, counted from the histories (averages per wake, or per device):',
    header: [
      'what',
      'events',
      'workflow tasks',
      '`pending` signals',
      '`drained` signals',
      '`registered` signals',
      'timers started',
      'timers cancelled',
      'markers (local activities)',
      'billable actions (estimate)',
    ],
    rows: [
      row('registration: `PUT` → idle (per device)', registration),
      row('wake → drain cycle, quiet channel (per wake)', quietCycle),
      row('wake → drain cycle, busy channel (per wake)', busyCycle),
      row(`idle device, ${Math.round(durationMs / 1000)} s (per device)`, idleSince),
    ],
  });
  section.tables.push({
    title: 'History events by type per wake → drain cycle:',
    header: ['event type', 'quiet channel', 'busy channel'],
    rows: [...new Set([...Object.keys(quietCycle.byType), ...Object.keys(busyCycle.byType)])]
      .sort()
      .map((type) => [type, quietCycle.byType[type] ?? 0, busyCycle.byType[type] ?? 0]),
  });
  section.details.perWake = { quiet: quietCycle, busy: busyCycle };
  section.details.idle = { duringRun: idleSince, wholeHistory: idleTotal };
  section.details.registration = registration;
  section.details.busyDevices = busy.map((d) => ({
    wakes: wakes(d),
    signals: since(d).signals,
    timersStarted: since(d).timersStarted,
    events: since(d).events,
  }));
  section.details.messages = messages;

  // Cumulative wakes of the busy devices against the ceiling's staircase.
  const lastWake = Math.max(...busy.flatMap((d) => logs.get(d.workflowId)!.wakes), durationMs);
  const staircase: [number, number][] = [[0, 1]];
  for (let k = 1; k * minIntervalMs <= lastWake; k++) staircase.push([(k * minIntervalMs) / 1000, k + 1]);
  const cumulative = (d: ApiDevice) => [[0, 0] as const, ...logs.get(d.workflowId)!.wakes.map((t, i) => [t / 1000, i + 1] as const)];
  const medianDevice = [...busy].sort((a, b) => wakes(a) - wakes(b))[Math.floor(busy.length / 2)]!;
  const fewest = [...busy].sort((a, b) => wakes(a) - wakes(b))[0]!;
  report.plot(
    section,
    'busy-channel.svg',
    'Busy channel (one message per second): cumulative wakes of a device against the design ceiling',
    lineChart({
      title: `One message per second, ${busy.length} devices draining each wake`,
      xLabel: 'seconds since the first message',
      yLabel: 'wakes received by one device',
      series: [
        { name: 'design ceiling: first message, then one per 15 s', points: staircase, step: true, dashed: true },
        { name: `median device (${wakes(medianDevice)} wakes)`, points: cumulative(medianDevice), step: true },
        { name: `device with the fewest (${wakes(fewest)} wakes)`, points: cumulative(fewest), step: true },
      ],
    }),
  );
  const wakeToDrainNote = quantile(
    quiet.flatMap((d) => logs.get(d.workflowId)!.wakes),
    0.5,
  );
  section.details.quietWakeMedianOffsetMs = wakeToDrainNote;
  section.setup.push(
    setupProse('live-traffic', {
      seconds: Math.round(durationMs / 1000),
      busyDevices: busy.length,
      busyMessages: messages.busy,
      quietDevices: quiet.length,
      quietEverySeconds: Math.round(run.quietEveryMs / 1000),
      quietMessages: messages.quiet,
      idleDevices: idle.length,
    }),
  );
}

function subtract(a: HistoryCost, b: HistoryCost): HistoryCost {
  const minus = (x: Readonly<Record<string, number>>, y: Readonly<Record<string, number>>) =>
    Object.fromEntries(
      Object.entries(x)
        .map(([k, v]) => [k, v - (y[k] ?? 0)])
        .filter(([, v]) => v !== 0),
    );
  return {
    events: a.events - b.events,
    byType: minus(a.byType, b.byType),
    signals: minus(a.signals, b.signals),
    workflowTasks: a.workflowTasks - b.workflowTasks,
    timersStarted: a.timersStarted - b.timersStarted,
    markers: a.markers - b.markers,
    actions: a.actions - b.actions,
  };
}

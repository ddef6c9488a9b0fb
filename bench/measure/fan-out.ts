/**
 * Items 1–3 — one message to a server channel of N member devices, through the real
 * processes: JetStream → bridge (recipients, upsert, the signals owed; its signaller's
 * signal-with-start per device, paced at the default) → worker (registration workflows, claim
 * and send as local activities, the UnifiedPush transport with RFC 8291 encryption) → the fake
 * distributor, which decrypts every wake. Side by side:
 *
 *   - not paced: the same on other worlds, the bridge at `BRIDGE_SIGNAL_BACKLOG_MS=0` — what
 *     the pacing costs the fan-out;
 *   - engine ceiling: as many signal-with-starts, at the bridge's concurrency, to trivial
 *     workflows that each run one no-op local activity (bench/workflows/ceiling.ts), on a
 *     worker built by the same `createWorker`;
 *   - floor: the same wakes posted straight from one process through the same transport.
 *
 * On the stack's engine: the dev server (section `fan-out`) or the real Temporal server
 * (`fan-out-server`); `compareEngines` puts the two side by side when both ran.
 */
import { registrationWorkflowId, settleAll } from '../../src/testing.js';
import type { DistributorMessage } from '../../simulator/distributor.js';
import type { FloorRegistration, FloorRun } from '../children/floor-sender.js';
import { forkHelper, type Helper } from '../children/ipc.js';
import { fetchEvents, historyCost } from '../history.js';
import type { Report, Section } from '../report.js';
import type { BenchSettings } from '../settings.js';
import { setupProse } from '../setup-prose.js';
import { forgetBridgeConsumer, sidesInTurn } from '../sides.js';
import { insertRegistrations, messageEvent, seedServer, type ServerWorld } from '../seed.js';
import type { BenchStack, RunningApps, TemporalEngine } from '../stack.js';
import { quantile, sleep } from '../stats.js';
import { lineChart } from '../svg.js';
import { ceilingSignal, ceilingWorkflowType } from '../workflows/ceiling.js';
import type { DistributorTap } from '../distributor-tap.js';
import { jetstream } from '@nats-io/jetstream';
import { sql } from 'slonik';

/** The bridge's signals in flight per event (src/bridge/event-bridge.ts default): the ceiling uses the same. */
export const signalConcurrency = 16;
/** The worker's local-activity slots (src/worker/temporal-worker.ts): the floor sends as many at once. */
const floorConcurrency = 100;

export interface Arrivals {
  /** ms after the start, ascending. */
  readonly offsets: number[];
  readonly expected: number;
  readonly completed: boolean;
}

export interface FanOutResult {
  readonly devices: number;
  readonly ours: Arrivals;
  /** The same, not paced. */
  readonly unpaced: Arrivals;
  readonly ceiling: Arrivals;
  readonly floor: Arrivals;
  /** The bridge's receipt → ack of the event (all signal-with-starts accepted), s. */
  readonly bridgeSeconds: number | null;
  /** The ceiling's first signal-with-start → the last one accepted, s. */
  readonly ceilingSignalSeconds: number;
}

/** The reference of the pacing's cost. */
const notPaced = 'not paced (BRIDGE_SIGNAL_BACKLOG_MS=0)';

/** Devices of the small world each side warms up on (first activations load code), not counted. */
const warmUpDevices = 20;

const sectionId: Readonly<Record<TemporalEngine, string>> = { 'dev-server': 'fan-out', server: 'fan-out-server' };
const engineName: Readonly<Record<TemporalEngine, string>> = { 'dev-server': 'the Temporal dev server', server: 'the real Temporal server' };

export async function measureFanOut(stack: BenchStack, report: Report, settings: BenchSettings, tap: DistributorTap): Promise<void> {
  const onServer = stack.engine === 'server';
  const section = onServer
    ? report.section(sectionId.server, '1–3 on the real Temporal server: fan-out to a server channel', 'fan-out-server')
    : report.section(sectionId['dev-server'], '1–3. Fan-out: one message to a server channel');
  if (onServer) section.setup.push(setupProse('fan-out-server'));
  section.setup.push(
    setupProse('fan-out', {
      floorConcurrency,
      warmUpDevices,
      deadlineSeconds: Math.round((settings.fanOut.deadlineMs(settings.fanOut.sizes.at(-1)!) * (onServer ? 2 : 1)) / 1000),
    }),
    setupProse('sides-in-turn'),
  );
  const sizes = [warmUpDevices, ...settings.fanOut.sizes];
  const seedWorlds = async () => {
    const worlds: ServerWorld[] = [];
    for (const size of sizes) {
      const world = await seedServer(stack.pool, { members: size, channels: 1, distributor: tap.distributor });
      await insertRegistrations(stack.pool, world.devices);
      worlds.push(world);
    }
    return worlds;
  };
  const worlds = await seedWorlds();
  const unpacedWorlds = await seedWorlds();
  // Fresh statistics, as autovacuum keeps them in production: a world seeded a moment ago looks
  // empty to the planner, and the first message to the largest one is then planned for that.
  await stack.pool.query(sql.unsafe`VACUUM ANALYZE`);
  // The real server is slower here (two cores for all of its services): twice the time.
  const deadlineOf = (devices: number) => settings.fanOut.deadlineMs(devices) * (onServer ? 2 : 1);
  // One side at a time, in turns (bench/sides.ts).
  const unpacedSide: Side = {
    label: 'fanout-unpaced',
    taskQueue: 'bench-fanout-unpaced',
    env: { BRIDGE_SIGNAL_BACKLOG_MS: '0' },
    worlds: unpacedWorlds,
  };
  const pacedSide: Side = { label: 'fanout', taskQueue: 'bench-fanout', env: {}, worlds };
  const order = sidesInTurn(report.run, [unpacedSide, pacedSide]);
  section.details.sideOrder = order.map((side) => side.label);
  const measured = new Map<Side, SideArrivals>();
  for (const side of order) measured.set(side, await runSide(stack, tap, side, deadlineOf));
  const paced = measured.get(pacedSide)!;
  const unpaced = measured.get(unpacedSide)!;
  let ceiling: Helper | undefined;
  let floor: Helper | undefined;
  const results: FanOutResult[] = [];
  try {
    ceiling = forkHelper(stack.dir, 'ceiling-worker');
    await ceiling.call('start', { temporalEnv: stack.temporalEnv, taskQueue: 'bench-ceiling' });
    floor = forkHelper(stack.dir, 'floor-sender');
    for (const [i, world] of worlds.entries()) {
      const devices = world.devices.length;
      const deadlineMs = deadlineOf(devices);
      process.stdout.write(`  ${devices} devices${i === 0 ? ' (warm-up, not counted)' : ''}: engine ceiling…`);
      const { arrivals: ceilingRun, signalSeconds } = await runCeiling(stack, ceiling, `${i}`, devices, deadlineMs);
      process.stdout.write(` ${summary(ceilingRun)}; floor…`);
      const floorRun = await runFloor(tap, floor, world, deadlineMs);
      process.stdout.write(` ${summary(floorRun)}\n`);
      if (i === 0) continue;
      const result = {
        devices,
        ours: paced.arrivals[i]!,
        unpaced: unpaced.arrivals[i]!,
        ceiling: ceilingRun,
        floor: floorRun,
        bridgeSeconds: paced.bridgeSeconds[i]!,
        ceilingSignalSeconds: signalSeconds,
      };
      results.push(result);
      reportSize(report, section, result, onServer ? ' (real server)' : '', onServer ? 'fan-out-server' : 'fan-out');
    }
    await firstWakeCost(stack, report, section, worlds[1]!);
  } finally {
    await floor?.stop();
    await ceiling?.stop();
  }
  section.details.runs = results.map((r) => ({
    devices: r.devices,
    bridgeSeconds: r.bridgeSeconds,
    ceilingSignalSeconds: r.ceilingSignalSeconds,
    ours: describeArrivals(r.ours),
    unpaced: describeArrivals(r.unpaced),
    ceiling: describeArrivals(r.ceiling),
    floor: describeArrivals(r.floor),
  }));
}

/** The product's worker and bridge with `env`, on a task queue and worlds of their own. */
interface Side {
  readonly label: string;
  readonly taskQueue: string;
  readonly env: Readonly<Record<string, string>>;
  readonly worlds: readonly ServerWorld[];
}

interface SideArrivals {
  readonly arrivals: Arrivals[];
  readonly bridgeSeconds: (number | null)[];
}

/**
 * One side — the product's worker and bridge with `env` on their own task queue — through every
 * world in turn: the arrivals and the bridge's own time per world. What it left owed (a run cut
 * at its deadline) is cleared, so that the next side's signaller does not send it.
 */
async function runSide(stack: BenchStack, tap: DistributorTap, side: Side, deadlineOf: (devices: number) => number): Promise<SideArrivals> {
  const arrivals: Arrivals[] = [];
  const bridgeSeconds: (number | null)[] = [];
  let apps: RunningApps | undefined;
  try {
    apps = await stack.startApps({ label: side.label, taskQueue: side.taskQueue, apps: ['worker', 'bridge'], env: side.env });
    for (const [i, world] of side.worlds.entries()) {
      process.stdout.write(`  ${world.devices.length} devices${i === 0 ? ' (warm-up, not counted)' : ''}, ${side.label}…`);
      const before = await bridgeEventSeconds(apps);
      const run = await runOurs(stack, tap, world, deadlineOf(world.devices.length));
      const after = await bridgeEventSeconds(apps);
      process.stdout.write(` ${summary(run)}\n`);
      arrivals.push(run);
      bridgeSeconds.push(before === null || after === null ? null : after - before);
    }
  } finally {
    await apps?.stop();
    await stack.pool.query(sql.unsafe`DELETE FROM push_signal_outbox`);
    await forgetBridgeConsumer(stack);
  }
  return { arrivals, bridgeSeconds };
}

/** Publishes one message; collects the wakes the world's endpoints receive. */
export async function runOurs(stack: BenchStack, tap: DistributorTap, world: ServerWorld, deadlineMs: number): Promise<Arrivals> {
  const endpoints = new Set(world.devices.map((d) => d.endpoint));
  const offsets: number[] = [];
  const problems: string[] = [];
  const started = Date.now();
  tap.listen((message: DistributorMessage) => {
    if (!endpoints.has(message.endpoint)) return;
    offsets.push(Date.now() - started);
    problems.push(...message.problems);
  });
  try {
    const message = messageEvent(world.channelIds[0]!, world.ownerId);
    await jetstream(stack.nats).publish(`channel.${world.channelIds[0]}.MESSAGE_CREATE`, message.body, { msgID: `message-${message.id}` });
    const completed = await until(
      () => offsets.length >= endpoints.size,
      deadlineMs,
      () => `${offsets.length} wakes`,
    );
    if (problems.length > 0) throw new Error(`the distributor found problems in our wakes: ${problems.slice(0, 3).join('; ')}`);
    return { offsets, expected: endpoints.size, completed };
  } finally {
    tap.listen(undefined);
  }
}

export async function runCeiling(
  stack: BenchStack,
  helper: Helper,
  run: string,
  devices: number,
  deadlineMs: number,
): Promise<{ arrivals: Arrivals; signalSeconds: number }> {
  await helper.call('take');
  const ids = Array.from({ length: devices }, (_, i) => `bench-ceiling:${run}:${i}`);
  const started = Date.now();
  const failures = await settleAll(ids, signalConcurrency, async (workflowId) => {
    await stack.temporal.workflow.signalWithStart(ceilingWorkflowType, {
      taskQueue: 'bench-ceiling',
      workflowId,
      signal: ceilingSignal,
      signalArgs: [],
    });
  });
  if (failures.length > 0) throw new Error(`${failures.length} ceiling signal-with-starts failed: ${String(failures[0])}`);
  const signalSeconds = (Date.now() - started) / 1000;
  const count = () => helper.call<number>('count');
  const completed = await until(
    async () => (await count()) >= devices,
    deadlineMs,
    async () => `${await count()} activities`,
    200,
  );
  const times = await helper.call<number[]>('take');
  return { arrivals: { offsets: times.map((t) => t - started).sort((a, b) => a - b), expected: devices, completed }, signalSeconds };
}

/** The bridge's total event-handling time so far (receipt → ack), from its /metrics. */
async function bridgeEventSeconds(apps: RunningApps): Promise<number | null> {
  const text = await (await fetch(apps.bridgeMetricsUrl)).text().catch(() => '');
  const line = text.split('\n').find((l) => l.startsWith('push_bridge_event_duration_seconds_sum'));
  return line === undefined ? null : Number(line.trim().split(/\s+/).at(-1));
}

async function runFloor(tap: DistributorTap, helper: Helper, world: ServerWorld, deadlineMs: number): Promise<Arrivals> {
  const endpoints = new Set(world.devices.map((d) => d.endpoint));
  const registrations: FloorRegistration[] = world.devices.map((d, i) => ({
    id: String(i),
    token: d.endpoint,
    p256dh: d.keys.p256dh.toString('base64url'),
    auth: d.keys.auth.toString('base64url'),
  }));
  const arrivals: number[] = [];
  tap.listen((message) => {
    if (endpoints.has(message.endpoint)) arrivals.push(Date.now());
  });
  try {
    const sent = await helper.call<FloorRun>('send', { registrations, concurrency: floorConcurrency });
    const completed = await until(
      () => arrivals.length >= endpoints.size,
      deadlineMs,
      () => `${arrivals.length} wakes`,
    );
    if ((sent.outcomes.delivered ?? 0) !== endpoints.size) throw new Error(`floor: ${JSON.stringify(sent.outcomes)}`);
    return { offsets: arrivals.map((t) => t - sent.startedAt).sort((a, b) => a - b), expected: endpoints.size, completed };
  } finally {
    tap.listen(undefined);
  }
}

function reportSize(report: Report, section: Section, result: FanOutResult, headlineSuffix: string, plotPrefix: string): void {
  const n = result.devices.toLocaleString('en-US');
  const last = (a: Arrivals) => (a.completed ? a.offsets.at(-1)! / 1000 : null);
  const rate = (a: Arrivals) => (a.offsets.length === 0 ? null : a.offsets.length / (a.offsets.at(-1)! / 1000));
  const missed = (a: Arrivals, who: string) => (a.completed ? [] : [`${who}: ${a.offsets.length} of ${a.expected} by the deadline`]);
  const notes = [
    ...missed(result.ours, 'ours'),
    ...missed(result.unpaced, 'not paced'),
    ...missed(result.ceiling, 'ceiling'),
    ...missed(result.floor, 'floor'),
  ];
  const note = notes.length === 0 ? undefined : notes.join('; ');
  report.figure(section, {
    name: `${n} devices: message → last wake`,
    value: last(result.ours),
    unit: 's',
    reference: { name: 'engine ceiling', value: last(result.ceiling) },
    note,
    headline: `1. fan-out${headlineSuffix}`,
  });
  report.figure(section, {
    name: `${n} devices: wakes per second`,
    value: rate(result.ours),
    unit: '/s',
    reference: { name: 'engine ceiling: no-op activities per second', value: rate(result.ceiling) },
    headline: `2. engine ceiling${headlineSuffix}`,
  });
  report.figure(section, {
    name: `${n} devices: wakes per second`,
    value: rate(result.ours),
    unit: '/s',
    reference: { name: notPaced, value: rate(result.unpaced) },
    headline: `2. pacing's cost${headlineSuffix}`,
  });
  report.figure(section, {
    name: `${n} devices: wakes per second`,
    value: rate(result.ours),
    unit: '/s',
    reference: { name: 'floor: direct POSTs from one process', value: rate(result.floor) },
    headline: `3. floor${headlineSuffix}`,
  });
  report.figure(section, {
    name: `${n} devices: the bridge's event → acknowledged (rows and owed signals committed)`,
    value: result.bridgeSeconds,
    unit: 's',
    reference: { name: 'engine ceiling: the same number of signal-with-starts, 16 at a time', value: result.ceilingSignalSeconds },
  });
  const first = (a: Arrivals) => (a.offsets[0] ?? Number.NaN) / 1000;
  report.figure(section, {
    name: `${n} devices: message → first wake`,
    value: first(result.ours),
    unit: 's',
    reference: { name: 'engine ceiling', value: first(result.ceiling) },
  });
  report.figure(section, {
    name: `${n} devices: message → first wake`,
    value: first(result.ours),
    unit: 's',
    reference: { name: notPaced, value: first(result.unpaced) },
  });
  const curve = (a: Arrivals) => [[0, 0] as const, ...a.offsets.map((t, i) => [t / 1000, i + 1] as const)];
  report.plot(
    section,
    `${plotPrefix}-${result.devices}.svg`,
    `Fan-out to ${n} devices: cumulative wakes over time, ours vs engine ceiling vs floor`,
    lineChart({
      title: `One message to ${n} devices: cumulative arrivals`,
      xLabel: 'seconds after the message (ours) / the first signal (ceiling) / the first POST (floor)',
      yLabel: 'wakes received',
      series: [
        { name: 'ours: bridge → workflows → UnifiedPush', points: curve(result.ours), step: true },
        { name: 'ours, not paced', points: curve(result.unpaced), step: true, dashed: true },
        { name: 'engine ceiling: signal-with-start → no-op local activity', points: curve(result.ceiling), step: true, dashed: true },
        { name: 'floor: direct POSTs from one process', points: curve(result.floor), step: true },
      ],
    }),
  );
}

/** History cost of a device's first wake in the fan-out: its workflow started by the message. */
async function firstWakeCost(stack: BenchStack, report: Report, section: Section, world: ServerWorld): Promise<void> {
  const sample = world.devices.slice(0, 5);
  const costs = await Promise.all(
    sample.map(async (d) => historyCost(await fetchEvents(stack.temporal, registrationWorkflowId(d.userId, d.deviceId)))),
  );
  const ceilingEvents = await fetchEvents(stack.temporal, 'bench-ceiling:1:0');
  const ceilingCost = historyCost(ceilingEvents);
  const avg = (key: 'events' | 'actions') => costs.reduce((a, c) => a + c[key], 0) / costs.length;
  report.figure(section, {
    name: 'history of a device woken by its first message (events)',
    value: avg('events'),
    unit: 'events',
    reference: { name: 'ceiling workflow, whole history', value: ceilingCost.events },
  });
  report.figure(section, {
    name: 'billable actions (estimate) of that history',
    value: avg('actions'),
    unit: 'actions',
    reference: { name: 'ceiling workflow', value: ceilingCost.actions },
  });
  section.details.firstWakeHistory = { ours: costs[0], ceiling: ceilingCost };
}

function describeArrivals(a: Arrivals) {
  return {
    expected: a.expected,
    received: a.offsets.length,
    completed: a.completed,
    firstMs: a.offsets[0] ?? null,
    p50Ms: a.offsets.length === 0 ? null : quantile(a.offsets, 0.5),
    lastMs: a.offsets.at(-1) ?? null,
    // The curve, thinned to at most 200 points: [ms, cumulative count].
    curve: thinCurve(a.offsets),
  };
}

function thinCurve(offsets: readonly number[]): [number, number][] {
  const step = Math.max(1, Math.ceil(offsets.length / 200));
  const out: [number, number][] = [];
  for (let i = step - 1; i < offsets.length; i += step) out.push([offsets[i]!, i + 1]);
  if (offsets.length > 0 && out.at(-1)?.[1] !== offsets.length) out.push([offsets.at(-1)!, offsets.length]);
  return out;
}

function summary(a: Arrivals): string {
  return `${a.offsets.length}/${a.expected} in ${((a.offsets.at(-1) ?? 0) / 1000).toFixed(1)} s`;
}

/** Polls `done` until it holds or `timeoutMs` passed; prints `progress()` every 30 s meanwhile. */
async function until(
  done: () => boolean | Promise<boolean>,
  timeoutMs: number,
  progress: () => string | Promise<string>,
  pollMs = 20,
): Promise<boolean> {
  const start = Date.now();
  let shown = start;
  while (Date.now() < start + timeoutMs) {
    if (await done()) return true;
    if (Date.now() - shown >= 30_000) {
      shown = Date.now();
      process.stdout.write(` [${Math.round((shown - start) / 1000)} s: ${await progress()}]`);
    }
    await sleep(pollMs);
  }
  return done();
}

/**
 * Both engines side by side (when both ran in this run): each of the real server's figures
 * against the dev server's, ours and the engine ceiling alike.
 */
export function compareEngines(report: Report): void {
  const dev = report.sections.find((s) => s.id === sectionId['dev-server']);
  const server = report.sections.find((s) => s.id === sectionId.server);
  if (dev === undefined || server === undefined) return;
  const section = report.section('engines', '1–3 on both engines: the dev server and the real Temporal server side by side', 'fan-out-server');
  const devFigure = (name: string, referenceName: string | undefined) =>
    dev.figures.find((f) => f.name === name && f.reference?.name === referenceName);
  for (const figure of server.figures) {
    if (figure.name.startsWith('history') || figure.name.startsWith('billable')) continue;
    const other = devFigure(figure.name, figure.reference?.name);
    if (other === undefined) continue;
    if (figure.reference?.name.startsWith('floor') === true) continue; // the floor does not involve Temporal
    report.figure(section, {
      name: `ours: ${figure.name}`,
      value: figure.value,
      unit: figure.unit,
      reference: { name: engineName['dev-server'], value: other.value },
      ...(figure.name.includes('last wake') ? { headline: `1–3 on ${engineName.server}` } : {}),
    });
    if (figure.reference !== undefined && other.reference !== undefined) {
      report.figure(section, {
        name: `engine ceiling: ${figure.name}`,
        value: figure.reference.value,
        unit: figure.unit,
        reference: { name: engineName['dev-server'], value: other.reference.value },
      });
    }
  }
  section.setup.push(setupProse('engines', { serverEngine: engineName.server, devServerEngine: engineName['dev-server'] }));
}

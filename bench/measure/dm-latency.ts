/**
 * A DM's message → wake latency while a server channel fans out and beside a lively channel,
 * through the real processes (JetStream → bridges → the signaller → worker → UnifiedPush → the
 * fake distributor), with the signaller's pacing (BRIDGE_SIGNAL_BACKLOG_MS, its default) against
 * the same run without it (`0`): the reference. The bridge and the api run as several replicas
 * (settings: 2 and 2), as in production: one signaller paces for all of them.
 *
 * Per engine (the dev server: section `dm-latency`; the real Temporal server: `dm-latency-server`)
 * and per side: DMs on an idle stack first; then for each size a message to a server channel of
 * that many member devices; then a lively channel — its members drain every wake at once through
 * the apis, as the app does, and a message comes every `messageEveryMs` for `durationMs`. During
 * each, a DM every `dmEveryMs` to a callee of its own, and a message to a 20-member server of its
 * own every `smallEveryMs` (between servers). Each DM and each small server is fresh, so no
 * interval holds a wake back; the clock of a message starts at its `created_at`, taken when it is
 * published.
 */
import os from 'node:os';
import { jetstream } from '@nats-io/jetstream';
import { sql } from 'slonik';
import type { DistributorMessage } from '../../simulator/distributor.js';
import { withApi, type ApiDevice } from '../devices.js';
import type { DistributorTap } from '../distributor-tap.js';
import type { Report, Section } from '../report.js';
import { devicesFor, insertRegistrations, messageEvent, nextIds, seedServer, seedUsers, type BenchDevice, type ServerWorld } from '../seed.js';
import type { BenchSettings } from '../settings.js';
import { defaultBacklogMs, registrationWorkflowId } from '../../src/testing.js';
import { setupProse } from '../setup-prose.js';
import { forgetBridgeConsumer, sidesInTurn } from '../sides.js';
import type { AppName, BenchStack, RunningApps, TemporalEngine } from '../stack.js';
import { quantile, sleep } from '../stats.js';
import { fetchEvents } from '../history.js';
import { wakePhases, type WakePhases } from '../wake-phases.js';

const sectionId: Readonly<Record<TemporalEngine, string>> = { 'dev-server': 'dm-latency', server: 'dm-latency-server' };
const smallMembers = 20;
const sides = [
  { id: 'reference', backlogMs: '0', name: 'not paced (BRIDGE_SIGNAL_BACKLOG_MS=0)' },
  { id: 'paced', backlogMs: undefined, name: `paced (BRIDGE_SIGNAL_BACKLOG_MS=${defaultBacklogMs})` },
] as const;
type Side = (typeof sides)[number]['id'];

interface Latencies {
  /** ms, in publishing order; null: no wake by the end. */
  readonly dms: (number | null)[];
  readonly small: (number | null)[];
  /** The slowest woken DMs and small servers' messages taken apart (wake-phases.ts), slowest first. */
  readonly slowest?: SlowWake[];
}

interface SlowWake extends WakePhases {
  readonly what: 'DM' | 'small server';
  /** Published this long after the run started, ms. */
  readonly sentAfterMs: number;
  readonly totalMs: number;
}

/** How many of the slowest wakes of each run are taken apart. */
const slowestShown = 5;

interface FanOutRun extends Latencies {
  readonly devices: number;
  /** Message → the fan-out's last wake, ms (null: not all within the measuring window). */
  readonly lastWakeMs: number | null;
  readonly windowMs: number;
  readonly received: number;
  /**
   * The DMs' and small servers' devices woken by the fan-out's end: work the engine did beside
   * it. The paced side serves them during the fan-out, the reference mostly after it, so the
   * fan-out's own rate alone charges that work to the pacing.
   */
  readonly besideWoken: number;
  readonly load: readonly [number, number];
}

/** A lively channel: DMs and small servers' messages beside it, and what it woke meanwhile. */
interface LivelyRun extends Latencies {
  readonly members: number;
  readonly messages: number;
  readonly messageEveryMs: number;
  readonly durationMs: number;
  /** Wakes of the channel's members within the run (a member is woken again after each drain). */
  readonly wakes: number;
  readonly drains: number;
  readonly drainFailures: number;
  readonly load: readonly [number, number];
}

interface SideRun {
  readonly idle: Latencies & { readonly load: readonly [number, number] };
  readonly fanOuts: FanOutRun[];
  readonly lively: LivelyRun;
}

export async function measureDmLatency(stack: BenchStack, report: Report, settings: BenchSettings, tap: DistributorTap): Promise<void> {
  const onServer = stack.engine === 'server';
  const section = report.section(
    sectionId[stack.engine],
    `DM latency during a fan-out and beside a lively channel${onServer ? ' on the real Temporal server' : ''}: pacing the signals that can wait`,
    onServer ? 'dm-latency-server' : 'dm-latency',
  );
  const { idleDms, dmEveryMs, smallEveryMs, lively, replicas } = settings.dmLatency;
  section.setup.push(
    setupProse('dm-latency', {
      engine: onServer ? 'the real Temporal server (PostgreSQL persistence, mTLS; the stack of `fan-out-server`)' : 'the Temporal dev server',
      bridges: replicas.bridges,
      apis: replicas.apis,
      idleDms,
      dmEveryMs,
      smallEverySeconds: smallEveryMs / 1000,
      smallMembers,
      windowSeconds: settings.dmLatency.windowMs(settings.dmLatency.sizes.at(-1)!) / 1000,
      livelyMembers: lively.members.toLocaleString('en-US'),
      livelyEverySeconds: lively.messageEveryMs / 1000,
      livelySeconds: lively.durationMs / 1000,
      backlogMs: defaultBacklogMs,
    }),
    setupProse('sides-in-turn'),
  );
  const runs = {} as Record<Side, SideRun>;
  const order = sidesInTurn(report.run, sides);
  section.details.sideOrder = order.map((side) => side.id);
  for (const side of order) {
    process.stdout.write(`  ${side.name}:\n`);
    runs[side.id] = await runSide(stack, tap, settings, side);
  }
  section.details.runs = runs;
  const loads = [
    runs.paced.idle.load,
    runs.reference.idle.load,
    ...runs.paced.fanOuts.map((r) => r.load),
    ...runs.reference.fanOuts.map((r) => r.load),
    runs.paced.lively.load,
    runs.reference.lively.load,
  ];
  section.details.loadAverage = { min: Math.min(...loads.flat()), max: Math.max(...loads.flat()) };
  reportFigures(report, section, runs, onServer ? ' (real server)' : '');
}

/** A fan-out's or a lively channel's world: the big channel, a callee per DM, a small server per message. */
interface World {
  readonly big: ServerWorld;
  readonly callees: Callee[];
  readonly smalls: ServerWorld[];
}

async function seedWorld(
  stack: BenchStack,
  tap: DistributorTap,
  caller: string,
  members: number,
  durationMs: number,
  settings: BenchSettings,
): Promise<World> {
  const { dmEveryMs, smallEveryMs } = settings.dmLatency;
  const big = await seedServer(stack.pool, { members, channels: 1, distributor: tap.distributor });
  await insertRegistrations(stack.pool, big.devices);
  const callees = await seedCallees(stack, tap, caller, Math.ceil(durationMs / dmEveryMs));
  const smalls: ServerWorld[] = [];
  for (let i = 0; i < Math.ceil(durationMs / smallEveryMs); i++) {
    const small = await seedServer(stack.pool, { members: smallMembers, channels: 1, distributor: tap.distributor });
    await insertRegistrations(stack.pool, small.devices);
    smalls.push(small);
  }
  return { big, callees, smalls };
}

async function runSide(stack: BenchStack, tap: DistributorTap, settings: BenchSettings, side: (typeof sides)[number]): Promise<SideRun> {
  const { sizes, idleDms, dmEveryMs, smallEveryMs, lively, replicas } = settings.dmLatency;
  const fanOutDeadline = settings.dmLatency.windowMs;
  // Every world of this side before its processes start: seeding is not measured.
  const caller = (await seedUsers(stack.pool, 1))[0]!;
  const idleCallees = await seedCallees(stack, tap, caller, idleDms + 3);
  const worlds: World[] = [];
  for (const size of sizes) worlds.push(await seedWorld(stack, tap, caller, size, fanOutDeadline(size), settings));
  const livelyWorld = await seedWorld(stack, tap, caller, lively.members, lively.durationMs, settings);
  // Fresh statistics, as autovacuum keeps them in production: seeded a moment ago, a 10,000-row
  // world looks empty to the planner, and recording its first message took over 30 s.
  await stack.pool.query(sql.unsafe`VACUUM ANALYZE`);
  const running: RunningApps[] = [];
  try {
    // debug: the bridges log each pacing sample and the window it left (.dev/bench/logs/dm-*-bridge.log).
    const env = { LOG_LEVEL: 'debug', ...(side.backlogMs === undefined ? {} : { BRIDGE_SIGNAL_BACKLOG_MS: side.backlogMs }) };
    const taskQueue = `bench-dm-${side.id}`;
    // Replica 1 with the worker, then the others: bridges and apis, each its own process.
    for (let i = 0; i < Math.max(replicas.bridges, replicas.apis); i++) {
      const apps: AppName[] = [
        ...(i === 0 ? (['worker'] as const) : []),
        ...(i < replicas.bridges ? (['bridge'] as const) : []),
        ...(i < replicas.apis ? (['api'] as const) : []),
      ];
      running.push(await stack.startApps({ label: `dm-${side.id}-${i + 1}`, taskQueue, apps, env }));
    }
    const apiUrls = running.slice(0, replicas.apis).map((r) => r.apiUrl);
    const watch = watchWakes(tap);
    try {
      // Warm-up, not counted: first activations load code and open connections.
      for (const callee of idleCallees.slice(0, 3)) await dmAndWait(stack, watch, caller, callee);
      const idleLoad = os.loadavg()[0]!;
      const dms: (number | null)[] = [];
      for (const callee of idleCallees.slice(3)) {
        dms.push(await dmAndWait(stack, watch, caller, callee));
        await sleep(200);
      }
      const idle = { dms, small: [], load: [idleLoad, os.loadavg()[0]!] as const };
      process.stdout.write(`    idle: DM p50 ${show(quantileOf(dms, 0.5))}, p99 ${show(quantileOf(dms, 0.99))}\n`);
      const fanOuts: FanOutRun[] = [];
      for (const world of worlds) {
        const run = await fanOutWithDms(stack, watch, caller, world, {
          dmEveryMs,
          smallEveryMs,
          deadlineMs: fanOutDeadline(world.big.devices.length),
        });
        process.stdout.write(
          `    ${world.big.devices.length} devices: last wake ${show(run.lastWakeMs)}; DM p50 ${show(quantileOf(run.dms, 0.5))}, p99 ${show(quantileOf(run.dms, 0.99))} (${run.dms.length} DMs); ${smallMembers}-member server p99 ${show(quantileOf(run.small, 0.99))}\n`,
        );
        fanOuts.push(run);
      }
      const livelyRun = await livelyWithDms(stack, watch, caller, livelyWorld, apiUrls, { dmEveryMs, smallEveryMs, ...lively });
      process.stdout.write(
        `    lively ${lively.members} members: ${livelyRun.messages} messages, ${livelyRun.wakes} wakes, ${livelyRun.drains} drains; DM p50 ${show(quantileOf(livelyRun.dms, 0.5))}, p99 ${show(quantileOf(livelyRun.dms, 0.99))} (${livelyRun.dms.length} DMs); ${smallMembers}-member server p99 ${show(quantileOf(livelyRun.small, 0.99))}\n`,
      );
      return { idle, fanOuts, lively: livelyRun };
    } finally {
      tap.listen(undefined);
    }
  } finally {
    for (const apps of running) await apps.stop();
    // What this side left owed (a fan-out cut at its window) is not the next side's to send.
    await stack.pool.query(sql.unsafe`DELETE FROM push_signal_outbox`);
    await forgetBridgeConsumer(stack);
  }
}

interface Callee {
  readonly device: BenchDevice;
  readonly channelId: string;
}

/** Users with one device each, and a DM channel between each and `caller`. */
async function seedCallees(stack: BenchStack, tap: DistributorTap, caller: string, count: number): Promise<Callee[]> {
  const devices = devicesFor(await seedUsers(stack.pool, count), tap.distributor);
  await insertRegistrations(stack.pool, devices);
  const channelIds = nextIds(count);
  const channels = sql.array(channelIds, 'int8');
  await stack.pool.query(sql.unsafe`INSERT INTO channels (id, server_id, type) SELECT id, NULL, 'dm' FROM unnest(${channels}) AS id`);
  await stack.pool.query(sql.unsafe`
    INSERT INTO channel_members (channel_id, user_id)
    SELECT c, u FROM unnest(${channels}, ${sql.array(
      devices.map((d) => d.userId),
      'int8',
    )}) AS t(c, u)
    UNION ALL SELECT c, ${caller}::int8 FROM unnest(${channels}) AS c`);
  return devices.map((device, i) => ({ device, channelId: channelIds[i]! }));
}

/** Arrival times (ms since epoch) by endpoint, first wake only. */
interface Watch {
  readonly arrivals: Map<string, number>;
  /** First wakes so far of the endpoints `which` selects (kept up to date as they arrive). */
  count(which: (endpoint: string) => boolean): number;
  /** Sees every wake from now on, first or not (undefined: none). */
  onEvery(listener: ((message: DistributorMessage) => void) | undefined): void;
}

function watchWakes(tap: DistributorTap): Watch {
  const arrivals = new Map<string, number>();
  const counters: { which: (endpoint: string) => boolean; n: number }[] = [];
  let every: ((message: DistributorMessage) => void) | undefined;
  tap.listen((message: DistributorMessage) => {
    every?.(message);
    if (arrivals.has(message.endpoint)) return;
    arrivals.set(message.endpoint, Date.now());
    for (const c of counters) if (c.which(message.endpoint)) c.n++;
  });
  return {
    arrivals,
    count(which) {
      let counter = counters.find((c) => c.which === which);
      if (counter === undefined) {
        counter = { which, n: [...arrivals.keys()].filter(which).length };
        counters.push(counter);
      }
      return counter.n;
    },
    onEvery(listener) {
      every = listener;
    },
  };
}

/**
 * Publishes a message; resolves with its `created_at` once JetStream has it. A publish is
 * retried (the same `msgID`: JetStream keeps one) when the busy machine delays its answer.
 */
async function publish(stack: BenchStack, channelId: string, authorId: string): Promise<number> {
  const message = messageEvent(channelId, authorId);
  const at = Date.parse((JSON.parse(message.body) as { created_at: string }).created_at);
  for (let attempt = 1; ; attempt++) {
    try {
      await jetstream(stack.nats).publish(`channel.${channelId}.MESSAGE_CREATE`, message.body, { msgID: `message-${message.id}`, timeout: 15_000 });
      return at;
    } catch (error) {
      if (attempt === 3) throw error;
    }
  }
}

async function dmAndWait(stack: BenchStack, watch: Watch, caller: string, callee: Callee): Promise<number | null> {
  const at = await publish(stack, callee.channelId, caller);
  const deadline = Date.now() + 30_000;
  while (!watch.arrivals.has(callee.device.endpoint) && Date.now() < deadline) await sleep(5);
  const woken = watch.arrivals.get(callee.device.endpoint);
  return woken === undefined ? null : woken - at;
}

async function fanOutWithDms(
  stack: BenchStack,
  watch: Watch,
  caller: string,
  world: World,
  timing: { dmEveryMs: number; smallEveryMs: number; deadlineMs: number },
): Promise<FanOutRun> {
  const loadBefore = os.loadavg()[0]!;
  const endpoints = world.big.devices.map((d) => d.endpoint);
  const big = new Set(endpoints);
  const isBig = (endpoint: string) => big.has(endpoint);
  const bigWoken = () => watch.count(isBig);
  const started = await publish(stack, world.big.channelIds[0]!, world.big.ownerId);
  const beside = besideTheLoad(stack, caller, world, timing, started);
  let lastWakeMs: number | null = null;
  let shown = Date.now();
  while (Date.now() < started + timing.deadlineMs) {
    const woken = bigWoken();
    if (woken === endpoints.length) {
      lastWakeMs = Math.max(...endpoints.map((e) => watch.arrivals.get(e)!)) - started;
      break;
    }
    const now = Date.now();
    beside.due(now);
    if (now - shown >= 30_000) {
      shown = now;
      process.stdout.write(`      [${Math.round((now - started) / 1000)} s: ${woken} wakes]\n`);
    }
    await sleep(10);
  }
  const receivedInWindow = bigWoken();
  await beside.published();
  const end = lastWakeMs === null ? Date.now() : started + lastWakeMs;
  // What was sent during the fan-out, given time to arrive.
  const { dms, small, slowest } = await latenciesOf(
    stack,
    watch,
    beside.dmsSent.filter((d) => d.at <= end),
    beside.smallsSent.filter((s) => s.at <= end),
    started,
  );
  const besideEndpoints = [
    ...beside.dmsSent.map((d) => d.callee.device.endpoint),
    ...beside.smallsSent.flatMap((s) => s.server.devices.map((d) => d.endpoint)),
  ];
  const besideWoken = besideEndpoints.filter((e) => (watch.arrivals.get(e) ?? Infinity) <= end).length;
  return {
    slowest,
    devices: endpoints.length,
    besideWoken,
    lastWakeMs,
    windowMs: timing.deadlineMs,
    received: lastWakeMs === null ? receivedInWindow : endpoints.length,
    dms,
    small,
    load: [loadBefore, os.loadavg()[0]!],
  };
}

/**
 * The DMs and small servers' messages beside a load, on their schedule from `started`: `due`
 * publishes what is due by `now`. Published alongside, not awaited in turn: a slow answer from
 * JetStream must not space them out.
 */
function besideTheLoad(stack: BenchStack, caller: string, world: World, timing: { dmEveryMs: number; smallEveryMs: number }, started: number) {
  const dmsSent: { callee: Callee; at: number }[] = [];
  const smallsSent: { server: ServerWorld; at: number }[] = [];
  const publishing: Promise<unknown>[] = [];
  let dmsCalled = 0;
  let smallsCalled = 0;
  let nextDm = started + timing.dmEveryMs;
  let nextSmall = started + timing.smallEveryMs;
  const send = (channelId: string, authorId: string, record?: (at: number) => void) => {
    const message = publish(stack, channelId, authorId).then(record);
    message.catch(() => undefined); // awaited with the others after the loop; not an unhandled rejection meanwhile
    publishing.push(message);
  };
  return {
    dmsSent,
    smallsSent,
    send,
    due(now: number): void {
      if (now >= nextDm && dmsCalled < world.callees.length) {
        const callee = world.callees[dmsCalled++]!;
        send(callee.channelId, caller, (at) => dmsSent.push({ callee, at }));
        nextDm += timing.dmEveryMs;
      }
      if (now >= nextSmall && smallsCalled < world.smalls.length) {
        const server = world.smalls[smallsCalled++]!;
        send(server.channelIds[0]!, server.ownerId, (at) => smallsSent.push({ server, at }));
        nextSmall += timing.smallEveryMs;
      }
    },
    published: () => Promise.all(publishing),
  };
}

/**
 * A lively channel: its members drain every wake at once (through the apis in turn, as phones
 * would), so each message owes a signal to every member that drained since the one before; a
 * message every `messageEveryMs` for `durationMs`, with DMs and small servers' messages beside it.
 */
async function livelyWithDms(
  stack: BenchStack,
  watch: Watch,
  caller: string,
  world: World,
  apiUrls: readonly string[],
  timing: { dmEveryMs: number; smallEveryMs: number; members: number; messageEveryMs: number; durationMs: number },
): Promise<LivelyRun> {
  const loadBefore = os.loadavg()[0]!;
  const phones = new Map<string, ApiDevice>();
  const bigDevices = world.big.devices;
  for (const [i, url] of apiUrls.entries()) {
    for (const d of await withApi(
      bigDevices.filter((_, j) => j % apiUrls.length === i),
      url,
      stack.jwtSecret,
    ))
      phones.set(d.endpoint, d);
  }
  let wakes = 0;
  let drains = 0;
  let drainFailures = 0;
  const draining = new Set<string>();
  const drainsInFlight = new Set<Promise<void>>();
  watch.onEvery((message) => {
    const phone = phones.get(message.endpoint);
    if (phone === undefined) return;
    wakes++;
    if (draining.has(phone.endpoint)) return;
    draining.add(phone.endpoint);
    const drain = phone.api
      .drain()
      .then(
        () => void drains++,
        () => void drainFailures++,
      )
      .finally(() => {
        draining.delete(phone.endpoint);
        drainsInFlight.delete(drain);
      });
    drainsInFlight.add(drain);
  });
  const started = Date.now();
  const beside = besideTheLoad(stack, caller, world, timing, started);
  let messages = 0;
  let nextMessage = started;
  let shown = started;
  while (Date.now() < started + timing.durationMs) {
    const now = Date.now();
    if (now >= nextMessage) {
      beside.send(world.big.channelIds[0]!, world.big.ownerId);
      messages++;
      nextMessage += timing.messageEveryMs;
    }
    beside.due(now);
    if (now - shown >= 30_000) {
      shown = now;
      process.stdout.write(`      [${Math.round((now - started) / 1000)} s: ${messages} messages, ${wakes} wakes, ${drains} drains]\n`);
    }
    await sleep(10);
  }
  const wakesInRun = wakes;
  await beside.published();
  const { dms, small, slowest } = await latenciesOf(stack, watch, beside.dmsSent, beside.smallsSent, started);
  watch.onEvery(undefined);
  await Promise.all(drainsInFlight);
  return {
    members: bigDevices.length,
    messages,
    messageEveryMs: timing.messageEveryMs,
    durationMs: timing.durationMs,
    wakes: wakesInRun,
    drains,
    drainFailures,
    dms,
    small,
    slowest,
    load: [loadBefore, os.loadavg()[0]!],
  };
}

/** The DMs' and small servers' latencies, once they arrived (or 30 s passed): null for none. */
async function latenciesOf(
  stack: BenchStack,
  watch: Watch,
  dmsSent: readonly { callee: Callee; at: number }[],
  smallsSent: readonly { server: ServerWorld; at: number }[],
  started: number,
): Promise<Latencies> {
  const settle = Date.now() + 30_000;
  const allIn = () =>
    dmsSent.every((d) => watch.arrivals.has(d.callee.device.endpoint)) &&
    smallsSent.every((s) => s.server.devices.every((d) => watch.arrivals.has(d.endpoint)));
  while (!allIn() && Date.now() < settle) await sleep(50);
  const dms = dmsSent.map((d) => {
    const woken = watch.arrivals.get(d.callee.device.endpoint);
    return woken === undefined ? null : woken - d.at;
  });
  const small = smallsSent.map((s) => {
    const times = s.server.devices.map((d) => watch.arrivals.get(d.endpoint));
    return times.some((t) => t === undefined) ? null : Math.max(...(times as number[])) - s.at;
  });
  const woken = [
    ...dmsSent.map((d) => ({ what: 'DM' as const, device: d.callee.device, at: d.at })),
    ...smallsSent.map((s) => ({ what: 'small server' as const, device: lastWoken(watch, s.server.devices), at: s.at })),
  ].flatMap(({ what, device, at }) => {
    const wokenAt = device === undefined ? undefined : watch.arrivals.get(device.endpoint);
    return device === undefined || wokenAt === undefined ? [] : [{ what, device, at, wokenAt }];
  });
  woken.sort((a, b) => b.wokenAt - b.at - (a.wokenAt - a.at));
  const slowest: SlowWake[] = [];
  for (const w of woken.slice(0, slowestShown)) {
    const events = await fetchEvents(stack.temporal, registrationWorkflowId(w.device.userId, w.device.deviceId)).catch(() => []);
    const phases = wakePhases(events, w.at, w.wokenAt);
    if (phases !== undefined) slowest.push({ what: w.what, sentAfterMs: w.at - started, totalMs: w.wokenAt - w.at, ...phases });
  }
  return { dms, small, slowest };
}

/** Of a small server's devices, the one woken last (undefined while any is not woken). */
function lastWoken(watch: Watch, devices: readonly BenchDevice[]): BenchDevice | undefined {
  let last: BenchDevice | undefined;
  for (const d of devices) {
    const at = watch.arrivals.get(d.endpoint);
    if (at === undefined) return undefined;
    if (last === undefined || at > watch.arrivals.get(last.endpoint)!) last = d;
  }
  return last;
}

/** A quantile of the latencies; a missing wake counts as infinitely late. */
function quantileOf(values: readonly (number | null)[], q: number): number | null {
  if (values.length === 0) return null;
  return quantile(
    values.map((v) => v ?? Number.POSITIVE_INFINITY),
    q,
  );
}

function show(ms: number | null): string {
  return ms === null ? '—' : `${Math.round(ms)} ms`;
}

/** "479 DMs", or "479 DMs, 351 not woken" — a quantile past the woken ones is not measured. */
function samples(values: readonly (number | null)[], what: string): string {
  const missed = values.filter((v) => v === null).length;
  return `${values.length} ${what}${missed === 0 ? '' : `, ${missed} not woken`}`;
}

function reportFigures(report: Report, section: Section, runs: Record<Side, SideRun>, suffix: string): void {
  const reference = 'reference: not paced';
  const seconds = (ms: number | null) => (ms === null || !Number.isFinite(ms) ? null : ms / 1000);
  for (const q of [0.5, 0.99] as const) {
    const label = q === 0.5 ? 'p50' : 'p99';
    report.figure(section, {
      name: `idle: DM message → wake, ${label}`,
      value: seconds(quantileOf(runs.paced.idle.dms, q)),
      unit: 's',
      reference: { name: reference, value: seconds(quantileOf(runs.reference.idle.dms, q)) },
    });
  }
  runs.paced.fanOuts.forEach((paced, i) => {
    const ref = runs.reference.fanOuts[i]!;
    const n = paced.devices.toLocaleString('en-US');
    for (const q of [0.5, 0.99] as const) {
      const label = q === 0.5 ? 'p50' : 'p99';
      report.figure(section, {
        name: `during a fan-out to ${n} devices: DM message → wake, ${label}`,
        value: seconds(quantileOf(paced.dms, q)),
        unit: 's',
        reference: { name: reference, value: seconds(quantileOf(ref.dms, q)) },
        note: q === 0.99 ? `${samples(paced.dms, 'DMs')} (reference ${samples(ref.dms, 'DMs')})` : undefined,
        ...(q === 0.99 ? { headline: `DM p99 during a fan-out${suffix}` } : {}),
      });
    }
    report.figure(section, {
      name: `during a fan-out to ${n} devices: a ${smallMembers}-member server's message → its last wake, p99`,
      value: seconds(quantileOf(paced.small, 0.99)),
      unit: 's',
      reference: { name: reference, value: seconds(quantileOf(ref.small, 0.99)) },
      note: `${samples(paced.small, 'messages')} (reference ${samples(ref.small, 'messages')})`,
    });
    // Finished: devices ÷ time to the last wake; cut at the window: the wakes within it ÷ the window.
    const rate = (r: FanOutRun) => r.received / ((r.lastWakeMs ?? r.windowMs) / 1000);
    const cut = (r: FanOutRun, who: string) =>
      r.lastWakeMs === null ? [`${who}: ${r.received} of ${r.devices} in the ${r.windowMs / 1000} s window`] : [];
    const cuts = [...cut(paced, 'ours'), ...cut(ref, 'reference')];
    report.figure(section, {
      name: `fan-out to ${n} devices: wakes per second`,
      value: rate(paced),
      unit: '/s',
      reference: { name: reference, value: rate(ref) },
      ...(cuts.length === 0 ? {} : { note: cuts.join('; ') }),
    });
    const withBeside = (r: FanOutRun) => (r.received + r.besideWoken) / ((r.lastWakeMs ?? r.windowMs) / 1000);
    report.figure(section, {
      name: `fan-out to ${n} devices: wakes per second, with the DMs' and small servers' woken meanwhile`,
      value: withBeside(paced),
      unit: '/s',
      reference: { name: reference, value: withBeside(ref) },
      note: `beside it ${paced.besideWoken} (reference ${ref.besideWoken})`,
    });
  });
  const paced = runs.paced.lively;
  const ref = runs.reference.lively;
  const moment = `beside a lively ${paced.members.toLocaleString('en-US')}-member channel (a message every ${paced.messageEveryMs / 1000} s)`;
  for (const q of [0.5, 0.99] as const) {
    const label = q === 0.5 ? 'p50' : 'p99';
    report.figure(section, {
      name: `${moment}: DM message → wake, ${label}`,
      value: seconds(quantileOf(paced.dms, q)),
      unit: 's',
      reference: { name: reference, value: seconds(quantileOf(ref.dms, q)) },
      note: q === 0.99 ? `${samples(paced.dms, 'DMs')} (reference ${samples(ref.dms, 'DMs')})` : undefined,
      ...(q === 0.99 ? { headline: `DM p99 beside a lively channel${suffix}` } : {}),
    });
  }
  report.figure(section, {
    name: `${moment}: a ${smallMembers}-member server's message → its last wake, p99`,
    value: seconds(quantileOf(paced.small, 0.99)),
    unit: 's',
    reference: { name: reference, value: seconds(quantileOf(ref.small, 0.99)) },
    note: `${samples(paced.small, 'messages')} (reference ${samples(ref.small, 'messages')})`,
  });
  report.figure(section, {
    name: `${moment}: its members' wakes per second`,
    value: paced.wakes / (paced.durationMs / 1000),
    unit: '/s',
    reference: { name: reference, value: ref.wakes / (ref.durationMs / 1000) },
    note: `${paced.messages} messages; drains ${paced.drains} (${paced.drainFailures} failed), reference ${ref.drains} (${ref.drainFailures} failed)`,
  });
  section.tables.push(slowestTable(runs.paced));
  const load = section.details.loadAverage as { min: number; max: number };
  section.setup.push(setupProse('dm-latency-load', { loadMin: load.min.toFixed(1), loadMax: load.max.toFixed(1), cores: os.cpus().length }));
}

/** Ours' slowest wakes of each run, taken apart: what the p99 is made of. */
function slowestTable(paced: SideRun) {
  const runs = [
    ...paced.fanOuts.map((r) => ({ label: `fan-out to ${r.devices.toLocaleString('en-US')}`, slowest: r.slowest ?? [] })),
    { label: `lively ${paced.lively.members.toLocaleString('en-US')}-member channel`, slowest: paced.lively.slowest ?? [] },
  ];
  const s = (ms: number) => (ms / 1000).toFixed(2);
  return {
    title:
      `Ours: the ${slowestShown} slowest wakes of each run taken apart from their devices' histories (seconds): intake = \`created_at\` → signal accepted ` +
      "(JetStream, the bridge, the signal); queue = the signal's workflow task scheduled → started (Temporal's task queue, a worker's free slot); " +
      'worker = task started → the wake at the distributor (activation, claim, send):',
    header: ['run', 'message', 'sent at (s into the run)', 'total', 'intake', 'queue', 'worker', 'workflow tasks'],
    rows: runs.flatMap((run) =>
      run.slowest.map((w) => [run.label, w.what, s(w.sentAfterMs), s(w.totalMs), s(w.intakeMs), s(w.queueMs), s(w.workerMs), w.workflowTasks]),
    ),
  };
}

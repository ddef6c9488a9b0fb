/**
 * Registration churn. Every `PUT /api/push/registration` starts the
 * device's workflow or signals it (the app re-registers on every start), so its cost is a
 * Temporal call on top of the api's own work. Measured through the real api and worker
 * processes:
 *
 *   - `PUT` throughput for new devices (each starts a workflow) and for registered ones (each
 *     signals a running workflow), against the bare signal-with-start the api makes
 *     (`signalRegistered`) for as many other devices, from the benchmark process, at the
 *     same concurrency, on the same worker;
 *   - what one re-registration costs: history events, billable actions and history bytes,
 *     PostgreSQL commits, row writes and WAL bytes — and so what re-registering on every app
 *     start costs a device a day;
 *   - the history bytes of a wake → drain cycle, for the capacity model's storage figure.
 */
import proto from '@temporalio/proto';
import { sql } from 'slonik';
import { z } from 'zod';
import { registrationWorkflowId, settleAll, signalPending, signalRegistered } from '../../src/testing.js';
import { settledHistoryLengths, withApi, type ApiDevice } from '../devices.js';
import type { DistributorTap } from '../distributor-tap.js';
import { addCosts, fetchEvents, historyCost, scaleCost, type HistoryCost } from '../history.js';
import type { Report, Section } from '../report.js';
import type { BenchSettings } from '../settings.js';
import { setupProse } from '../setup-prose.js';
import { devicesFor, insertRegistrations, seedUsers, type BenchDevice } from '../seed.js';
import type { BenchStack, RunningApps } from '../stack.js';
import { median, quantile, sleep } from '../stats.js';

const HistoryEvent = proto.temporal.api.history.v1.HistoryEvent;
type Event = Awaited<ReturnType<typeof fetchEvents>>[number];

/** App starts a day the per-day figures assume (a phone whose app is opened a few times a day). */
export const appStartsPerDay = 10;

const taskQueue = 'bench-churn';

interface Round {
  readonly seconds: number;
  readonly latencies: number[];
}

interface Writes {
  /** Transactions committed, reads included (pg_stat_database.xact_commit). */
  readonly transactions: number;
  /** WAL flushes to disk (pg_stat_wal.wal_sync): the durable commits, a few merged into one when they coincide. */
  readonly walSyncs: number;
  readonly rowsWritten: number;
  readonly walBytes: number;
}

export async function measureScaleChurn(stack: BenchStack, report: Report, settings: BenchSettings, tap: DistributorTap): Promise<void> {
  const section = report.section('scale-churn', 'Scale: registration churn', 'scale');
  const { churnDevices: count, churnConcurrency: concurrency, wakeSample } = settings.atScale;
  const users = await seedUsers(stack.pool, 2 * count);
  const viaApi = devicesFor(users.slice(0, count), tap.distributor);
  const bare = devicesFor(users.slice(count), tap.distributor);
  // The reference devices' rows exist as `PUT` would have written them: their workflows do
  // the same first claim as ours.
  await insertRegistrations(stack.pool, bare);
  let apps: RunningApps | undefined;
  try {
    apps = await stack.startApps({ label: 'churn', taskQueue, apps: ['api', 'worker'] });
    const devices = await withApi(viaApi, apps.apiUrl, stack.jwtSecret);
    const register = (d: ApiDevice) =>
      d.api.register({
        transport: 'unifiedpush',
        token: d.endpoint,
        p256dh: d.keys.p256dh.toString('base64url'),
        auth: d.keys.auth.toString('base64url'),
      });
    const signalWithStart = (d: BenchDevice) => signalRegistered(stack.temporal, taskQueue, d, 'unifiedpush');
    const ids = (list: readonly BenchDevice[]) => list.map((d) => registrationWorkflowId(d.userId, d.deviceId));

    // A few of each first, not counted: first activations load code and open connections.
    const warmUp = await withApi(devicesFor(await seedUsers(stack.pool, 20), tap.distributor), apps.apiUrl, stack.jwtSecret);
    await timedRound(warmUp, concurrency, register);

    process.stdout.write(`  churn: ${count} first PUTs, then ${count} bare signal-with-starts…\n`);
    const firstPut = await timedRound(devices, concurrency, register);
    const firstBare = await timedRound(bare, concurrency, signalWithStart);
    const afterFirst = await settledHistoryLengths(stack.temporal, [...ids(devices), ...ids(bare)], 300_000);

    process.stdout.write(`  churn: ${count} re-registrations (PUT), then ${count} bare signals…\n`);
    const before = await writes(stack);
    const againPut = await timedRound(devices, concurrency, register);
    await sleep(11_000); // an idle backend publishes its table statistics within 10 s
    const putWrites = subtract(await writes(stack), before);
    const againBare = await timedRound(bare, concurrency, signalWithStart);
    const afterAgain = await settledHistoryLengths(stack.temporal, ids(devices), 300_000);

    // History of the first registration and of one re-registration, per device.
    const sample = devices.slice(0, Math.min(200, devices.length));
    const first: HistoryCost[] = [];
    const again: HistoryCost[] = [];
    const bytes = { first: [] as number[], again: [] as number[] };
    await settleAll(sample, 16, async (d) => {
      const events = await fetchEvents(stack.temporal, d.workflowId);
      const cut = afterFirst.get(d.workflowId)!;
      const end = afterAgain.get(d.workflowId)!;
      first.push(historyCost(events.slice(0, cut), events));
      again.push(historyCost(events.slice(cut, end), events));
      bytes.first.push(eventBytes(events.slice(0, cut)));
      bytes.again.push(eventBytes(events.slice(cut, end)));
    });
    const firstCost = scaleCost(addCosts(first), first.length);
    const againCost = scaleCost(addCosts(again), again.length);
    const wake = await wakeCycles(stack, tap, devices.slice(0, wakeSample), afterAgain);

    reportChurn(report, section, { count, concurrency, firstPut, firstBare, againPut, againBare, putWrites, firstCost, againCost, bytes, wake });
  } finally {
    tap.listen(undefined);
    await apps?.stop();
  }
}

async function timedRound<T>(items: readonly T[], concurrency: number, work: (item: T) => Promise<unknown>): Promise<Round> {
  const latencies: number[] = [];
  const started = performance.now();
  const failures = await settleAll(items, concurrency, async (item) => {
    const t = performance.now();
    await work(item);
    latencies.push(performance.now() - t);
  });
  if (failures.length > 0) throw new Error(`${failures.length} of ${items.length} calls failed: ${String(failures[0])}`);
  return { seconds: (performance.now() - started) / 1000, latencies };
}

/** Bytes of the events as the history service stores them (protobuf), summed. */
function eventBytes(events: readonly Event[]): number {
  return events.reduce((a, e) => a + HistoryEvent.encode(HistoryEvent.fromObject(e)).finish().length, 0);
}

/** Transactions, WAL flushes, rows inserted/updated/deleted in every table, WAL bytes: the database's write counters. */
async function writes(stack: BenchStack): Promise<Writes> {
  return stack.pool.one(sql.type(z.object({ transactions: z.number(), walSyncs: z.number(), rowsWritten: z.number(), walBytes: z.number() }))`
    SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database())::float8 AS "transactions",
           (SELECT wal_sync FROM pg_stat_wal)::float8 AS "walSyncs",
           (SELECT sum(n_tup_ins + n_tup_upd + n_tup_del) FROM pg_stat_user_tables)::float8 AS "rowsWritten",
           pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::float8 AS "walBytes"`);
}

function subtract(a: Writes, b: Writes): Writes {
  return {
    transactions: a.transactions - b.transactions,
    walSyncs: a.walSyncs - b.walSyncs,
    rowsWritten: a.rowsWritten - b.rowsWritten,
    walBytes: a.walBytes - b.walBytes,
  };
}

function perDevice(w: Writes, devices: number): Writes {
  return {
    transactions: w.transactions / devices,
    walSyncs: w.walSyncs / devices,
    rowsWritten: w.rowsWritten / devices,
    walBytes: w.walBytes / devices,
  };
}

interface WakeCycles {
  readonly devices: number;
  readonly cost: HistoryCost;
  readonly bytes: number;
  /** PostgreSQL's writes per cycle: the claim, the drain (the pending row written by the benchmark left out). */
  readonly writes: Writes;
}

/**
 * One wake → drain cycle for each of `devices`: a pending DM row and the `pending` signal the
 * bridge would send; the wake reaches the fake distributor, the device drains through the api.
 * Counted from the histories once every workflow has settled.
 */
async function wakeCycles(
  stack: BenchStack,
  tap: DistributorTap,
  devices: readonly ApiDevice[],
  from: ReadonlyMap<string, number>,
): Promise<WakeCycles> {
  const byEndpoint = new Map(devices.map((d) => [d.endpoint, d]));
  const drained = new Set<string>();
  const drains: Promise<unknown>[] = [];
  tap.listen((message) => {
    const device = byEndpoint.get(message.endpoint);
    if (device === undefined || drained.has(device.workflowId)) return;
    drained.add(device.workflowId);
    drains.push(device.api.drain());
  });
  const messageId = '9100000000000';
  await stack.pool.query(sql.unsafe`
    INSERT INTO push_pending (registration_id, channel_id, message_count, first_message_id, first_at, last_message_id, is_dm)
    SELECT r.id, 9100000000001, 1, ${messageId}, now(), ${messageId}, true FROM push_registrations r
    WHERE r.user_id = ANY(${sql.array(
      devices.map((d) => d.userId),
      'int8',
    )})`);
  await sleep(11_000); // the row above is counted before, not during, the cycles
  const before = await writes(stack);
  await settleAll(devices, 16, (d) => signalPending(stack.temporal, taskQueue, d, 'unifiedpush'));
  const deadline = Date.now() + 120_000;
  while (drained.size < devices.length && Date.now() < deadline) await sleep(100);
  await Promise.all(drains);
  tap.listen(undefined);
  if (drained.size < devices.length) throw new Error(`${devices.length - drained.size} of ${devices.length} devices were not woken within 2 minutes`);
  await sleep(11_000); // an idle backend publishes its table statistics within 10 s
  const cycleWrites = subtract(await writes(stack), before);
  const settled = await settledHistoryLengths(
    stack.temporal,
    devices.map((d) => d.workflowId),
  );
  const costs: HistoryCost[] = [];
  let bytes = 0;
  await settleAll(devices, 16, async (d) => {
    const events = await fetchEvents(stack.temporal, d.workflowId);
    const slice = events.slice(from.get(d.workflowId), settled.get(d.workflowId));
    costs.push(historyCost(slice, events));
    bytes += eventBytes(slice);
  });
  return {
    devices: devices.length,
    cost: scaleCost(addCosts(costs), costs.length),
    bytes: bytes / costs.length,
    writes: perDevice(cycleWrites, devices.length),
  };
}

function reportChurn(
  report: Report,
  section: Section,
  run: {
    count: number;
    concurrency: number;
    firstPut: Round;
    firstBare: Round;
    againPut: Round;
    againBare: Round;
    putWrites: Writes;
    firstCost: HistoryCost;
    againCost: HistoryCost;
    bytes: { first: number[]; again: number[] };
    wake: WakeCycles;
  },
): void {
  const { count, concurrency } = run;
  const rate = (r: Round) => count / r.seconds;
  const bareName = 'bare signal-with-start (the Temporal call the api makes), same count and concurrency';
  report.figure(section, {
    name: 'first PUT of a device (starts its workflow): requests per second',
    value: rate(run.firstPut),
    unit: '/s',
    reference: { name: bareName, value: rate(run.firstBare) },
    headline: 'scale: churn',
  });
  report.figure(section, {
    name: 're-registration PUT (signals the running workflow): requests per second',
    value: rate(run.againPut),
    unit: '/s',
    reference: { name: bareName, value: rate(run.againBare) },
    headline: 'scale: churn',
  });
  report.figure(section, {
    name: 'first PUT: latency p50',
    value: median(run.firstPut.latencies),
    unit: 'ms',
    reference: { name: 'bare signal-with-start', value: median(run.firstBare.latencies) },
  });
  report.figure(section, {
    name: 're-registration PUT: latency p50',
    value: median(run.againPut.latencies),
    unit: 'ms',
    reference: { name: 'bare signal-with-start', value: median(run.againBare.latencies) },
  });
  report.figure(section, {
    name: 're-registration PUT: latency p99',
    value: quantile(run.againPut.latencies, 0.99),
    unit: 'ms',
    reference: { name: 'bare signal-with-start', value: quantile(run.againBare.latencies, 0.99) },
  });

  const putWrites = perDevice(run.putWrites, count);
  const again = run.againCost;
  const againBytes = median(run.bytes.again);
  report.figure(section, { name: 're-registration: history events', value: again.events, unit: 'events', headline: 'scale: churn' });
  report.figure(section, { name: 're-registration: billable actions (estimate)', value: again.actions, unit: 'actions', headline: 'scale: churn' });
  report.figure(section, { name: 're-registration: history bytes (protobuf, median)', value: againBytes, unit: 'B' });
  report.figure(section, {
    name: 're-registration: PostgreSQL WAL flushes (api and worker)',
    value: putWrites.walSyncs,
    unit: 'flushes',
    note: `${putWrites.transactions.toFixed(1)} transactions with reads`,
  });
  report.figure(section, { name: 're-registration: PostgreSQL rows written', value: putWrites.rowsWritten, unit: 'rows' });
  report.figure(section, { name: 're-registration: WAL bytes', value: putWrites.walBytes, unit: 'B' });
  report.figure(section, {
    name: `re-registering at each of ${appStartsPerDay} app starts a day: billable actions per device per day`,
    value: again.actions * appStartsPerDay,
    unit: 'actions',
    headline: 'scale: churn',
  });
  report.figure(section, { name: `the same: history events per device per day`, value: again.events * appStartsPerDay, unit: 'events' });
  report.figure(section, { name: `the same: PostgreSQL WAL per device per day`, value: (putWrites.walBytes * appStartsPerDay) / 1024, unit: 'KiB' });
  report.figure(section, { name: 'first registration: history events', value: run.firstCost.events, unit: 'events' });
  report.figure(section, { name: 'first registration: history bytes (median)', value: median(run.bytes.first), unit: 'B' });
  report.figure(section, {
    name: `wake → drain cycle (${run.wake.devices} devices, one DM each): history events`,
    value: run.wake.cost.events,
    unit: 'events',
  });
  report.figure(section, { name: 'wake → drain cycle: history bytes', value: run.wake.bytes, unit: 'B' });
  report.figure(section, { name: 'wake → drain cycle: billable actions (estimate)', value: run.wake.cost.actions, unit: 'actions' });
  report.figure(section, {
    name: 'wake → drain cycle: PostgreSQL WAL flushes (claim, send, drain)',
    value: run.wake.writes.walSyncs,
    unit: 'flushes',
    note: `${run.wake.writes.transactions.toFixed(1)} transactions with reads, ${run.wake.writes.rowsWritten.toFixed(1)} rows written, ${Math.round(run.wake.writes.walBytes)} B of WAL`,
  });

  const row = (label: string, c: HistoryCost, bytes: number) => [label, c.events, c.workflowTasks, c.timersStarted, c.markers, c.actions, bytes];
  section.tables.push({
    title: 'Temporal cost per device, counted from the histories:',
    header: ['what', 'events', 'workflow tasks', 'timers started', 'markers (local activities)', 'billable actions (estimate)', 'history bytes'],
    rows: [
      row('first `PUT` (start → idle)', run.firstCost, median(run.bytes.first)),
      row('re-registration `PUT` (signal → idle)', again, againBytes),
      row('wake → drain cycle (one DM)', run.wake.cost, run.wake.bytes),
    ],
  });
  section.details.churn = {
    devices: count,
    concurrency,
    rounds: { firstPut: run.firstPut.seconds, firstBare: run.firstBare.seconds, againPut: run.againPut.seconds, againBare: run.againBare.seconds },
    reregistration: { cost: again, bytes: againBytes, writes: putWrites },
    firstRegistration: { cost: run.firstCost, bytes: median(run.bytes.first) },
    wakeCycle: run.wake,
    appStartsPerDay,
  };
  section.setup.push(setupProse('scale-churn', { devices: count, concurrency, appStartsPerDay, wakeDevices: run.wake.devices }));
}

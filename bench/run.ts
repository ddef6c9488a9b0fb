/**
 * `make bench`: the benchmarks of docs/benchmarks.md on a private local stack under .dev/bench
 * (PostgreSQL, NATS JetStream, the Temporal dev server, and the product's own api, worker and
 * bridge processes), each figure next to a reference measured in the same run. Writes
 * bench/results/latest.json (the full output), bench/results/summary.json (what is committed)
 * and docs/benchmarks.md (+ docs/benchmarks/*.svg).
 *
 *   claim         the claim's conditional UPDATE vs a bare UPDATE
 *   wake-path     local vs regular activities (backs docs/architecture.md)
 *   bridge-sql    6. recipient resolution + upsert vs a bare INSERT … SELECT
 *   fan-out       1–3. one message to 1,000 / 10,000 devices vs engine ceiling vs floor (+4: first-wake history)
 *   drain-api     7. the api's drain vs a bare Koa handler with the same SQL
 *   live-traffic  4–5. a busy channel, wake cycles and idle devices in real time, counted from histories
 *   wake-to-drain message → drain and wake → drain as simulated phones see them, beside the api's figures
 *   worker-memory 8. worker RSS per 1,000 cached workflows
 *   fcm-budget    9. a busy channel through FCM, the per-device wake budget off and on (time-skipping server)
 *   sweep         maintenance: the no-session sweep's full pass at 1,000,000 registrations vs one bare DELETE
 *   outage-recovery the end of an outage: 1,000,000 held-back registrations cleared by keyset vs the old query
 *   scale         registration churn; PostgreSQL at a million registrations (bridge,
 *                 drain, maintenance, sizes) — its million rows stay, so it runs last on its stack
 *   fan-out-server 1–3 again on a second stack whose Temporal is the real server (mTLS), and
 *                 both engines side by side
 *   dm-latency    a DM's message → wake idle, during fan-outs and beside a lively channel, with
 *                 2 bridges and 2 apis, the signaller's pacing on and off (dm-latency-server: on
 *                 the real server)
 *   first-wake    a small channel's message → its first wake, many samples one at a time, vs as
 *                 many rounds of the engine ceiling (first-wake-server: on the real server)
 *
 * BENCH_SCALE=small for a quick run; BENCH_ONLY=<names> for a subset; BENCH_REPEAT=<n> runs it n
 * times on fresh stacks and reports medians with their spread. Numbers depend on the machine;
 * they are recorded, never asserted. Everything started is stopped, also on failure.
 */
import os from 'node:os';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { startDistributorTap, type DistributorTap } from './distributor-tap.js';
import { measureBridgeSql } from './measure/bridge-sql.js';
import { measureClaim } from './measure/claim.js';
import { measureDmLatency } from './measure/dm-latency.js';
import { measureDrainApi } from './measure/drain-api.js';
import { compareEngines, measureFanOut } from './measure/fan-out.js';
import { measureFanOutChurn } from './measure/fan-out-churn.js';
import { measureFirstWake } from './measure/first-wake.js';
import { measureFcmBudget } from './measure/fcm-budget.js';
import { measureLiveTraffic } from './measure/live-traffic.js';
import { measureMaintenanceSweep } from './measure/maintenance-sweep.js';
import { measureOutageRecovery } from './measure/outage-recovery.js';
import { measureScaleChurn } from './measure/scale-churn.js';
import { measureScalePostgres } from './measure/scale-postgres.js';
import { measureWakePath } from './measure/wake-path.js';
import { measureWakeToDrain } from './measure/wake-to-drain.js';
import { measureWorkerMemory } from './measure/worker-memory.js';
import { Report } from './report.js';
import { readResults, summaryFile } from './results.js';
import { loadBenchSettings, type BenchSettings, type MeasurementName } from './settings.js';
import { describeEnvironment, startBenchStack, stopBenchStack, type BenchStack, type Environment } from './stack.js';

type Measure = (stack: BenchStack, report: Report, settings: BenchSettings, tap: DistributorTap) => Promise<void>;

/**
 * In the order they run. The fan-out runs last: its 11,000 workflows each hold a 15-minute
 * re-wake timer (their wakes are never drained), which must not fire inside another
 * measurement. docs/benchmarks.md lists them in the issue's order (`docsOrder`).
 */
const measurements: readonly (readonly [MeasurementName, Measure])[] = [
  ['claim', (stack, report, settings) => measureClaim(stack, report, settings)],
  ['wake-path', (stack, report, settings, tap) => measureWakePath(stack, report, settings, tap.distributor)],
  ['bridge-sql', (stack, report, settings, tap) => measureBridgeSql(stack, report, settings, tap.distributor)],
  ['drain-api', measureDrainApi],
  ['live-traffic', measureLiveTraffic],
  ['wake-to-drain', measureWakeToDrain],
  ['worker-memory', measureWorkerMemory],
  ['fcm-budget', (stack, report, settings) => measureFcmBudget(stack, report, settings)],
  ['fan-out', measureFanOut],
  ['fan-out-churn', measureFanOutChurn],
  ['dm-latency', measureDmLatency],
  ['first-wake', measureFirstWake],
  // Last: it loads a million registrations (and removes them again).
  ['sweep', (stack, report, settings) => measureMaintenanceSweep(stack, report, settings)],
  // Also loads (and removes) a million registrations.
  ['outage-recovery', (stack, report, settings) => measureOutageRecovery(stack, report, settings)],
  // Last of all: its million rows stay until the stack is discarded.
  ['scale', measureScale],
];

/**
 * The worker-memory measurement counts bytes, not time: when both run, it runs during the
 * live traffic's five real-time minutes (on its own worker process and task queue) instead of
 * after them, which keeps `make bench` near 15 minutes on two cores.
 */
const liveTrafficWithMemory: Measure = async (stack, report, settings, tap) => {
  let memory: Promise<void> | undefined;
  const runMemory = () =>
    (memory ??= measureWorkerMemory(stack, report, settings, tap).catch((error: unknown) => {
      const section = report.sections.find((s) => s.id === 'worker-memory');
      if (section !== undefined) section.error = error instanceof Error ? error.message : String(error);
      process.stderr.write(`bench: worker-memory failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    }));
  try {
    await measureLiveTraffic(stack, report, settings, tap, { what: 'item 8 (worker memory)', run: runMemory });
  } finally {
    await runMemory(); // already done, or the traffic never started: then it runs now
  }
};

/**
 * Scale: churn first (a few thousand devices through the api), then the million rows,
 * which stay until the stack is discarded. Each part is its own section; one failing does
 * not stop the other.
 */
async function measureScale(stack: BenchStack, report: Report, settings: BenchSettings, tap: DistributorTap): Promise<void> {
  const parts: readonly (readonly [string, () => Promise<void>])[] = [
    ['scale-churn', () => measureScaleChurn(stack, report, settings, tap)],
    ['scale', () => measureScalePostgres(stack, report, settings)],
  ];
  const failures: string[] = [];
  for (const [id, part] of parts) {
    try {
      await part();
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      const section = report.sections.find((s) => s.id === id);
      if (section !== undefined) section.error = message;
      failures.push(`${id}: ${message}`);
      process.stderr.write(`bench: ${id} failed: ${error instanceof Error ? (error.stack ?? message) : message}\n`);
    }
  }
  if (failures.length > 0) throw new Error(failures.join('; '));
}

const docsOrder: readonly string[] = [
  'fan-out',
  'fan-out-server',
  'engines',
  'first-wake',
  'first-wake-server',
  'fan-out-churn',
  'dm-latency',
  'dm-latency-server',
  'live-traffic',
  'wake-to-drain',
  'bridge-sql',
  'drain-api',
  'worker-memory',
  'fcm-budget',
  'claim',
  'wake-path',
  'sweep',
  'outage-recovery',
  'scale',
  'scale-churn',
];

/** Titles of the real server's sections, for a run that failed before writing them. */
const serverSectionTitle = {
  'fan-out-server': '1–3 on the real Temporal server: fan-out to a server channel',
  'dm-latency-server': 'DM latency on the real Temporal server',
  'first-wake-server': "A channel message's first wake on the real Temporal server",
} as const;

async function main(): Promise<void> {
  const settings = loadBenchSettings();
  // The sections a partial run keeps: read first, so that a broken summary stops the run before it starts.
  const previous = readResults(summaryFile);
  const startedAt = new Date();
  const loadAtStart = os.loadavg()[0]!;
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const runs: Report[] = [];
  let stack: BenchStack | undefined;
  let tap: DistributorTap | undefined;
  let environment: Environment | undefined;
  let stopping: Promise<void> | undefined;
  let interrupted = false;
  const stopAll = () =>
    (stopping ??= (async () => {
      await tap?.distributor.close().catch(() => undefined);
      await stopBenchStack(stack);
    })());
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      interrupted = true;
      process.stderr.write(`\nbench: ${signal}, stopping everything under .dev/bench…\n`);
      void stopAll().finally(() => process.exit(130));
    });
  }
  try {
    tap = await startDistributorTap();
    for (let repeat = 1; repeat <= settings.repeat && !interrupted; repeat++) {
      if (settings.repeat > 1) process.stdout.write(`\nbench: run ${repeat} of ${settings.repeat}\n`);
      const report = new Report(repeat);
      runs.push(report);
      const onStacks = await runOnce(settings, tap, report, {
        started: (s) => (stack = s),
        stopped: () => (stack = undefined),
        interrupted: () => interrupted,
      });
      environment ??= onStacks.environment;
    }
  } finally {
    await stopAll();
  }
  if (interrupted) return; // the signal handler exits; an interrupted run writes nothing
  const report = Report.merged(runs);
  const finishedAt = new Date();
  report.write(
    { startedAt, finishedAt, environment, settings, order: docsOrder, loadAverage: { start: loadAtStart, end: os.loadavg()[0]! } },
    previous,
  );
  process.stdout.write(
    `\nbench: done in ${((finishedAt.getTime() - startedAt.getTime()) / 60_000).toFixed(1)} min; wrote bench/results/{latest,summary}.json and docs/benchmarks.md\n`,
  );
  const failed = report.sections.filter((s) => s.error !== undefined).length;
  if (failed > 0) throw new Error(`${failed} measurement(s) failed (recorded in the report)`);
}

/**
 * One run of the selected measurements into `report`: the dev server's stack first, then the
 * real server's for the sections that run there; each stack is stopped before the next starts
 * (`track` hears of them, so an interrupt stops the one running).
 */
async function runOnce(
  settings: BenchSettings,
  tap: DistributorTap,
  report: Report,
  track: { started(stack: BenchStack): void; stopped(): void; interrupted(): boolean },
): Promise<{ environment: Environment | undefined }> {
  let environment: Environment | undefined;
  const onDevServer = measurements.some(([name]) => settings.only.has(name));
  if (onDevServer) {
    process.stdout.write(`bench: scale ${settings.scale}; starting PostgreSQL, NATS and the Temporal dev server under .dev/bench\n`);
    const stack = await startBenchStack();
    track.started(stack);
    environment = await describeEnvironment(stack);
    printEnvironment(environment);
    const together = settings.only.has('live-traffic') && settings.only.has('worker-memory');
    for (const [name, measure] of measurements) {
      if (!settings.only.has(name) || track.interrupted()) continue;
      if (together && name === 'worker-memory') continue; // ran during the live traffic
      const started = Date.now();
      try {
        await (together && name === 'live-traffic' ? liveTrafficWithMemory : measure)(stack, report, settings, tap);
      } catch (error) {
        if (track.interrupted()) break;
        const section = report.sections.find((s) => s.id === name);
        const message = error instanceof Error ? error.message : String(error);
        if (section !== undefined && section.error === undefined) section.error = message;
        process.stderr.write(`bench: ${name} failed: ${error instanceof Error ? (error.stack ?? message) : message}\n`);
      }
      process.stdout.write(`  (${name}: ${((Date.now() - started) / 1000).toFixed(0)} s)\n`);
    }
    await stopBenchStack(stack);
    track.stopped();
  }
  const onServer = (['fan-out-server', 'dm-latency-server', 'first-wake-server'] as const).filter((name) => settings.only.has(name));
  if (onServer.length === 0 || track.interrupted()) return { environment };
  // A stack of its own: the same measurements on the real Temporal server.
  const started = Date.now();
  process.stdout.write(
    `\nbench: scale ${settings.scale}; starting PostgreSQL, NATS and the real Temporal server (PostgreSQL persistence, mTLS) under .dev/bench\n`,
  );
  try {
    const stack = await startBenchStack({ temporal: 'server' });
    track.started(stack);
    if (environment === undefined) {
      environment = await describeEnvironment(stack);
      printEnvironment(environment);
    }
    for (const name of onServer) {
      try {
        if (name === 'fan-out-server') {
          await measureFanOut(stack, report, settings, tap);
          compareEngines(report);
        } else if (name === 'first-wake-server') await measureFirstWake(stack, report, settings, tap);
        else await measureDmLatency(stack, report, settings, tap);
      } catch (error) {
        if (track.interrupted()) break;
        const section = report.sections.find((s) => s.id === name) ?? report.section(name, serverSectionTitle[name]);
        const message = error instanceof Error ? error.message : String(error);
        if (section.error === undefined) section.error = message;
        process.stderr.write(`bench: ${name} failed: ${error instanceof Error ? (error.stack ?? message) : message}\n`);
      }
    }
    await stopBenchStack(stack);
    track.stopped();
  } catch (error) {
    if (!track.interrupted()) {
      const message = error instanceof Error ? error.message : String(error);
      for (const name of onServer) {
        const section = report.sections.find((s) => s.id === name) ?? report.section(name, serverSectionTitle[name]);
        if (section.error === undefined) section.error = message;
      }
      process.stderr.write(`bench: the real server's stack failed: ${error instanceof Error ? (error.stack ?? message) : message}\n`);
    }
  }
  process.stdout.write(`  (${onServer.join(', ')}: ${((Date.now() - started) / 1000).toFixed(0)} s)\n`);
  return { environment };
}

function printEnvironment(env: Environment): void {
  process.stdout.write(
    [
      'environment:',
      `  cores      ${env.cores} × ${env.cpu}`,
      `  memory     ${env.memoryGiB} GiB; ${env.os}`,
      `  Node       ${env.node}`,
      `  Temporal   ${env.temporalCli}; TypeScript SDK ${env.temporalSdk}`,
      `  server     ${env.temporalServer} (the real server, for the sections run on it)`,
      `  PostgreSQL ${env.postgres}`,
      `  NATS       ${env.nats}`,
      '',
    ].join('\n'),
  );
}

main().catch((error: unknown) => {
  process.stderr.write(`bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});

/**
 * The capacity command's inputs and output (bench/capacity.ts is its entry): the measured
 * costs read from a results file (bench/results/latest.json; each figure says where it came
 * from, and the defaults below — measured on this machine, dated — fill what a file lacks),
 * the command line, the check of the model against the bench's own runs, the printed report.
 */
import path from 'node:path';
import { projectRoot } from '../src/paths.js';
import {
  defaultAssumptions,
  wakesPerSecond,
  type Assumptions,
  type Capacity,
  type CycleCost,
  type Measured,
  type Workload,
} from './capacity-model.js';

/**
 * Measured defaults, for a results file without the section (dated; each from `make bench`
 * on two shared cores): cycles, registration and worker memory from the full run of
 * 2026-12-02; churn, wake-cycle writes, sizes, bridge WAL and maintenance from the scale run
 * of 2026-12-03 (BENCH_ONLY=scale).
 */
export const measuredDefaults: Measured = {
  quietCycle: { events: 12, actions: 4, workflowTasks: 2, signals: 2, timersFired: 0 },
  busyCycle: { events: 16.5, actions: 4.95, workflowTasks: 2.87, signals: 2, timersFired: 0.95 },
  bytesPerEvent: 158,
  registration: { events: 6, actions: 2, workflowTasks: 1, signals: 1, timersFired: 0, bytes: 1612 },
  reregistration: { events: 5, actions: 2, workflowTasks: 1, signals: 1, timersFired: 0, bytes: 1103, pgCommits: 3.9, pgRows: 1, walBytes: 462 },
  wakeWrites: { pgCommits: 3, pgRows: 3, walBytes: 1500 },
  bridgeWalBytesPerRow: 150,
  workerBaseRssMiB: 219,
  workerRssMiBPerCachedWorkflow: 0.1524,
  maintenanceRun: { actions: 210, events: 1259 },
  mibPerMillion: { registrations: 311, pendingRows: 119, ledgerRows: 70.5 },
  // {"id","channel_id","author_id","created_at"} with 19-digit snowflakes and an RFC 3339 time.
  natsEventBytes: 125,
};

export interface ResultsFile {
  readonly at?: string;
  readonly sections?: readonly {
    readonly id: string;
    readonly measuredAt?: string;
    readonly figures?: readonly {
      readonly name: string;
      readonly value: number | null;
      readonly reference?: { readonly name: string; readonly value: number | null };
    }[];
    readonly details?: Record<string, unknown>;
  }[];
}

/** PostgreSQL's writes as the scale section records them (older files: `commits`, reads included). */
type Writes = { walSyncs?: number; commits?: number; rowsWritten: number; walBytes: number };

type Cost = { events: number; actions: number; workflowTasks: number; signals: Record<string, number>; byType: Record<string, number> };

const cycleOf = (c: Cost): CycleCost => ({
  events: c.events,
  actions: c.actions,
  workflowTasks: c.workflowTasks,
  signals: Object.values(c.signals ?? {}).reduce((a, b) => a + b, 0),
  timersFired: c.byType?.TimerFired ?? 0,
});

/** The measured costs from a results file, each field from its section or the default; and where each came from. */
export function measuredFrom(results: ResultsFile | undefined): { measured: Measured; sources: Record<string, string> } {
  const sources: Record<string, string> = {};
  const section = (id: string) => results?.sections?.find((s) => s.id === id);
  const take = <T>(
    field: string,
    id: string,
    read: (details: Record<string, unknown>, figures: NonNullable<ResultsFile['sections']>[number]['figures']) => T | undefined,
    fallback: T,
  ): T => {
    const s = section(id);
    try {
      const value = s === undefined ? undefined : read(s.details ?? {}, s.figures ?? []);
      if (value !== undefined && !JSON.stringify(value).includes('null')) {
        sources[field] = `${id} (${s!.measuredAt ?? results?.at ?? 'undated'})`;
        return value;
      }
    } catch {
      // fall through to the default
    }
    sources[field] = 'default (see measuredDefaults)';
    return fallback;
  };
  const m = measuredDefaults;
  const perWake = (d: Record<string, unknown>) => d.perWake as { quiet: Cost; busy: Cost } | undefined;
  const churn = (d: Record<string, unknown>) =>
    d.churn as
      | {
          reregistration: { cost: Cost; bytes: number; writes: Writes };
          firstRegistration: { cost: Cost; bytes: number };
          wakeCycle: { cost: Cost; bytes: number; writes?: Writes };
        }
      | undefined;
  const figure = (figures: readonly { name: string; value: number | null }[] | undefined, starts: string) =>
    figures?.find((f) => f.name.startsWith(starts))?.value ?? undefined;
  const measured: Measured = {
    quietCycle: take('quietCycle', 'live-traffic', (d) => (perWake(d) ? cycleOf(perWake(d)!.quiet) : undefined), m.quietCycle),
    busyCycle: take('busyCycle', 'live-traffic', (d) => (perWake(d) ? cycleOf(perWake(d)!.busy) : undefined), m.busyCycle),
    bytesPerEvent: take(
      'bytesPerEvent',
      'scale-churn',
      (d) => (churn(d) ? churn(d)!.wakeCycle.bytes / churn(d)!.wakeCycle.cost.events : undefined),
      m.bytesPerEvent,
    ),
    registration: take(
      'registration',
      'scale-churn',
      (d) => (churn(d) ? { ...cycleOf(churn(d)!.firstRegistration.cost), bytes: churn(d)!.firstRegistration.bytes } : undefined),
      m.registration,
    ),
    reregistration: take(
      'reregistration',
      'scale-churn',
      (d) => {
        const r = churn(d)?.reregistration;
        return r === undefined
          ? undefined
          : {
              ...cycleOf(r.cost),
              bytes: r.bytes,
              pgCommits: r.writes.walSyncs ?? r.writes.commits ?? m.reregistration.pgCommits,
              pgRows: r.writes.rowsWritten,
              walBytes: r.writes.walBytes,
            };
      },
      m.reregistration,
    ),
    wakeWrites: take(
      'wakeWrites',
      'scale-churn',
      (d) => {
        const w = churn(d)?.wakeCycle.writes;
        return w === undefined || w.walSyncs === undefined ? undefined : { pgCommits: w.walSyncs, pgRows: w.rowsWritten, walBytes: w.walBytes };
      },
      m.wakeWrites,
    ),
    bridgeWalBytesPerRow: take(
      'bridgeWalBytesPerRow',
      'scale',
      (d) => {
        const runs = d.bridge as { walBytesPerRow?: { created: number; updated: number } }[] | undefined;
        const last = runs?.at(-1)?.walBytesPerRow;
        return last === undefined ? undefined : (last.created + last.updated) / 2;
      },
      m.bridgeWalBytesPerRow,
    ),
    workerBaseRssMiB: take(
      'workerBaseRssMiB',
      'worker-memory',
      (d) => (d.samples as { rssMiB: number }[] | undefined)?.[0]?.rssMiB,
      m.workerBaseRssMiB,
    ),
    workerRssMiBPerCachedWorkflow: take(
      'workerRssMiBPerCachedWorkflow',
      'worker-memory',
      (d) => {
        const samples = d.samples as { cached: number; rssMiB: number }[] | undefined;
        if (samples === undefined || samples.length < 2) return undefined;
        const [first, last] = [samples[0]!, samples.at(-1)!];
        return (last.rssMiB - first.rssMiB) / (last.cached - first.cached);
      },
      m.workerRssMiBPerCachedWorkflow,
    ),
    maintenanceRun: take(
      'maintenanceRun',
      'scale',
      (d) => {
        const first = (d.maintenance as { runs?: { actions: number; events: number }[] } | undefined)?.runs?.[0];
        return first === undefined ? undefined : { actions: first.actions, events: first.events };
      },
      m.maintenanceRun,
    ),
    mibPerMillion: take(
      'mibPerMillion',
      'scale',
      (_, figures) => {
        const [registrations, pendingRows, ledgerRows] = ['push_registrations:', 'push_pending:', 'push_processed_events:'].map((p) =>
          figure(figures, p),
        );
        return registrations === undefined || pendingRows === undefined || ledgerRows === undefined
          ? undefined
          : { registrations, pendingRows, ledgerRows };
      },
      m.mibPerMillion,
    ),
    natsEventBytes: m.natsEventBytes,
  };
  sources.natsEventBytes = 'default (see measuredDefaults)';
  return { measured, sources };
}

// ---------------------------------------------------------------------------------------------
// The bench's own runs, predicted

export interface CheckRow {
  readonly what: string;
  readonly predicted: number;
  readonly measured: number;
  readonly unit: string;
}

/**
 * The model's prediction for what the bench itself ran, beside what it measured: the busy
 * channel's wakes and `pending` signals per device (the coalescing formula), and the fan-out's
 * time to the last wake, taking the engine ceiling's workflow tasks per second as the limit.
 */
export function checkAgainstBench(results: ResultsFile | undefined, assumptions: Assumptions = defaultAssumptions): CheckRow[] {
  const rows: CheckRow[] = [];
  const section = (id: string) => results?.sections?.find((s) => s.id === id);
  const live = section('live-traffic')?.details;
  const busyDevices = live?.busyDevices as { wakes: number; signals: Record<string, number> }[] | undefined;
  const messages = live?.messages as { busy: number } | undefined;
  if (busyDevices !== undefined && busyDevices.length > 0 && messages !== undefined) {
    // One message a second: λ = 1; the first message wakes at once, then the formula's rate.
    const predicted = 1 + (messages.busy - 1) * wakesPerSecond(1, assumptions.minIntervalSeconds);
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
    rows.push({
      what: `busy channel (1 message/s for ${messages.busy} s): wakes per device`,
      predicted,
      measured: median(busyDevices.map((d) => d.wakes)),
      unit: 'wakes',
    });
    rows.push({
      what: 'busy channel: `pending` signals per device (one per cycle)',
      predicted,
      measured: median(busyDevices.map((d) => d.signals.pending ?? 0)),
      unit: 'signals',
    });
  }
  for (const [id, engine] of [
    ['fan-out', ''],
    ['fan-out-server', ', real Temporal server'],
  ] as const) {
    const fanOut = section(id)?.details;
    const runs = fanOut?.runs as
      | {
          devices: number;
          ours: { lastMs: number | null; completed?: boolean };
          ceiling: { lastMs: number | null; received: number; completed?: boolean };
        }[]
      | undefined;
    const history = fanOut?.firstWakeHistory as { ours: Cost; ceiling: Cost } | undefined;
    // The workflow tasks up to the wake: a task a fired timer caused (the interval's) comes after it.
    const tasksToWake = (c: Cost) => Math.max(1, c.workflowTasks - (c.byType?.TimerFired ?? 0));
    for (const run of runs ?? []) {
      // A run that missed its deadline has no time to the last wake to compare.
      if (
        history === undefined ||
        run.ours.lastMs === null ||
        run.ceiling.lastMs === null ||
        run.ours.completed === false ||
        run.ceiling.completed === false
      )
        continue;
      // Engine-bound: our first wakes take as many workflow tasks per second as the ceiling's did.
      const ceilingTasksPerSecond = (run.ceiling.received * tasksToWake(history.ceiling)) / (run.ceiling.lastMs / 1000);
      const predicted = (run.devices * tasksToWake(history.ours)) / ceilingTasksPerSecond;
      rows.push({
        what: `fan-out to ${run.devices.toLocaleString('en-US')} devices${engine}: message → last wake (engine-bound on workflow tasks)`,
        predicted,
        measured: run.ours.lastMs / 1000,
        unit: 's',
      });
    }
  }
  return rows;
}

// ---------------------------------------------------------------------------------------------
// DM latency, as the bench measured it

export interface DmLatencyRow {
  /** The engine and the moment: "dev server, idle", "real server, during a fan-out to 10,000 devices"… */
  readonly what: string;
  /** Seconds, with the bridge's pacing of server channels (ours) and without it (reference). */
  readonly p50: { readonly paced: number | null; readonly reference: number | null };
  readonly p99: { readonly paced: number | null; readonly reference: number | null };
}

/**
 * A DM's message → wake latency from the `dm-latency` sections: not a cost the model
 * scales, but what a deployment's callers can expect while channels fan out, next to the same
 * run without the pacing.
 */
export function dmLatencyFromBench(results: ResultsFile | undefined): DmLatencyRow[] {
  const rows: DmLatencyRow[] = [];
  for (const [id, engine] of [
    ['dm-latency', 'dev server'],
    ['dm-latency-server', 'real server'],
  ] as const) {
    const figures = results?.sections?.find((s) => s.id === id)?.figures ?? [];
    const moments = [...new Set(figures.map((f) => /^(.*): DM message → wake, p(50|99)$/.exec(f.name)?.[1]).filter((m) => m !== undefined))];
    for (const moment of moments) {
      const pair = (q: string) => {
        const f = figures.find((x) => x.name === `${moment}: DM message → wake, ${q}`);
        return { paced: f?.value ?? null, reference: f?.reference?.value ?? null };
      };
      rows.push({ what: `${engine}, ${moment}`, p50: pair('p50'), p99: pair('p99') });
    }
  }
  return rows;
}

// ---------------------------------------------------------------------------------------------
// The command

const options: Record<
  string,
  { readonly key: keyof Workload | keyof Assumptions | 'pricePerMillion'; readonly help: string; readonly fallback?: number }
> = {
  '--devices': { key: 'devices', help: 'registrations (one workflow each)', fallback: 1_000_000 },
  '--messages-per-second': { key: 'messagesPerSecond', help: 'MESSAGE_CREATE events per second, all channels', fallback: 200 },
  '--dm-share': { key: 'dmShare', help: 'share of messages in DMs and group DMs', fallback: 0.3 },
  '--dm-audience': { key: 'dmAudience', help: 'devices a DM message wakes', fallback: 1.5 },
  '--server-audience': { key: 'serverAudience', help: 'devices a server-channel message wakes', fallback: 50 },
  '--app-starts-per-day': { key: 'appStartsPerDay', help: 'app starts (re-registrations) per device per day', fallback: 10 },
  '--new-devices-per-day': { key: 'newDevicesPerDay', help: 'first registrations per day', fallback: 0 },
  '--peak-factor': { key: 'peakFactor', help: 'peak hour ÷ average', fallback: 3 },
  '--retention-days': { key: 'retentionDays', help: 'namespace retention of closed runs' },
  '--worker-rss-mib': { key: 'workerRssBudgetMiB', help: "a worker's RSS budget" },
  '--cache-window-s': { key: 'cacheWindowSeconds', help: 'cache the workflows woken within this many seconds' },
  '--workflows-per-shard': { key: 'workflowsPerShard', help: 'open workflows per history shard' },
  '--transitions-per-shard': { key: 'transitionsPerShardPerSecond', help: 'state transitions per second per history shard' },
  '--min-interval-s': { key: 'minIntervalSeconds', help: 'PUSH_MIN_INTERVAL_MS in seconds' },
  '--price-per-million-actions': { key: 'pricePerMillion', help: 'a flat price instead of the published tiers (USD)' },
};

function usage(): string {
  return [
    'usage: npm run -s capacity -- [--devices N] [--messages-per-second N] [--dm-share F] … [--results FILE] [--check] [--json]',
    ...Object.entries(options).map(([flag, o]) => `  ${flag.padEnd(30)} ${o.help}${o.fallback === undefined ? '' : ` (default ${o.fallback})`}`),
    '  --results FILE                 the measured costs (default bench/results/latest.json)',
    "  --check                        also the model against the bench's own fan-out and busy channel",
    '  --json                         everything as JSON',
  ].join('\n');
}

export function parseArgs(argv: readonly string[]): { workload: Workload; assumptions: Assumptions; results: string; check: boolean; json: boolean } {
  const values = new Map<string, number>();
  let results = path.join(projectRoot, 'bench', 'results', 'latest.json');
  let check = false;
  let json = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--help' || arg === '-h') throw new UsageError(usage());
    if (arg === '--check') check = true;
    else if (arg === '--json') json = true;
    else if (arg === '--results') results = argv[++i] ?? '';
    else if (options[arg] !== undefined) {
      const value = Number(argv[++i]);
      if (!Number.isFinite(value) || value < 0) throw new UsageError(`${arg} needs a number ≥ 0 (got "${argv[i] ?? ''}")\n${usage()}`);
      values.set(options[arg]!.key, value);
    } else throw new UsageError(`unknown argument "${arg}"\n${usage()}`);
  }
  const workloadValue = (key: keyof Workload) => values.get(key) ?? Object.values(options).find((o) => o.key === key)!.fallback!;
  const workload: Workload = {
    devices: workloadValue('devices'),
    messagesPerSecond: workloadValue('messagesPerSecond'),
    dmShare: workloadValue('dmShare'),
    dmAudience: workloadValue('dmAudience'),
    serverAudience: workloadValue('serverAudience'),
    appStartsPerDay: workloadValue('appStartsPerDay'),
    newDevicesPerDay: workloadValue('newDevicesPerDay'),
    peakFactor: workloadValue('peakFactor'),
  };
  if (workload.dmShare > 1) throw new UsageError('--dm-share is a share: 0 … 1');
  const assumption = <K extends keyof Assumptions>(key: K) => (values.get(key) ?? defaultAssumptions[key]) as Assumptions[K];
  const flat = values.get('pricePerMillion');
  const assumptions: Assumptions = {
    ...defaultAssumptions,
    retentionDays: assumption('retentionDays'),
    workerRssBudgetMiB: assumption('workerRssBudgetMiB'),
    cacheWindowSeconds: assumption('cacheWindowSeconds'),
    workflowsPerShard: assumption('workflowsPerShard'),
    transitionsPerShardPerSecond: assumption('transitionsPerShardPerSecond'),
    minIntervalSeconds: assumption('minIntervalSeconds'),
    pricing:
      flat === undefined
        ? defaultAssumptions.pricing
        : {
            ...defaultAssumptions.pricing,
            source: `a flat $${flat} per million actions (--price-per-million-actions)`,
            actionTiers: [[Number.POSITIVE_INFINITY, flat]],
          },
  };
  return { workload, assumptions, results, check, json };
}

export class UsageError extends Error {}

const n = (v: number, digits = 3) => (Math.abs(v) >= 1000 ? Math.round(v).toLocaleString('en-US') : Number(v.toPrecision(digits)).toString());
const usd = (v: number) => `$${Math.round(v).toLocaleString('en-US')}`;

export function render(
  workload: Workload,
  assumptions: Assumptions,
  c: Capacity,
  sources: Record<string, string>,
  check: CheckRow[] | undefined,
  dmLatency: readonly DmLatencyRow[] = [],
): string {
  const lines: string[] = [];
  const row = (what: string, value: string, note = '') => lines.push(`  ${what.padEnd(48)} ${value}${note ? `   (${note})` : ''}`);
  lines.push(
    `workload: ${n(workload.devices)} devices, ${n(workload.messagesPerSecond)} messages/s (${n(workload.dmShare * 100)} % DMs waking ${n(workload.dmAudience)} devices, the rest ${n(workload.serverAudience)}), ${n(workload.appStartsPerDay)} app starts a day, peak ×${n(workload.peakFactor)}`,
    '',
    'per device',
  );
  row('messages reaching it', `${n(c.perDevice.messagesPerSecond * 3600)} /h`);
  row('wakes', `${n(c.perDevice.wakesPerDay)} /day`, `${n(c.perDevice.busyShare * 100)} % of cycles busy`);
  row('history events per wake → drain cycle', n(c.cycle.events));
  lines.push('', 'Temporal');
  row('wakes (= FCM/UnifiedPush sends)', `${n(c.wakesPerSecond)} /s`);
  row(
    'billable actions',
    `${n(c.temporal.actionsPerSecond)} /s`,
    `wakes ${n(c.temporal.actionsBySource.wakes)}, re-registrations ${n(c.temporal.actionsBySource.reregistrations)}, registrations ${n(c.temporal.actionsBySource.registrations)}, maintenance ${n(c.temporal.actionsBySource.maintenance)}`,
  );
  row('billable actions per month', n(c.temporal.actionsPerMonth), `${assumptions.hoursPerMonth} h`);
  row('workflow tasks', `${n(c.temporal.workflowTasksPerSecond)} /s`, `peak ${n(c.temporal.workflowTasksPerSecond * workload.peakFactor)} /s`);
  row('history written', `${n(c.temporal.historyEventsPerSecond)} events/s, ${n(c.temporal.historyBytesPerSecond / 1024)} KiB/s`);
  row(
    'history storage: open runs (active)',
    `${n(c.temporal.activeStorageGB)} GB`,
    `a run lasts ${Number.isFinite(c.temporal.runDays) ? n(c.temporal.runDays) : '∞'} days`,
  );
  row('history storage: closed runs (retained)', `${n(c.temporal.retainedStorageGB)} GB`, `${assumptions.retentionDays} days' retention`);
  row(
    'history shards to provision',
    n(c.temporal.historyShards),
    `${n(c.temporal.historyShardsBy.workflows)} by open workflows, ${n(c.temporal.historyShardsBy.transitions)} by ${n(c.temporal.stateTransitionsPerSecondPeak)} peak transitions/s`,
  );
  row(
    'workers',
    n(c.workers.workers),
    `${n(c.workers.cachedWorkflows)} workflows woken within ${assumptions.cacheWindowSeconds} s cached, ${n(c.workers.workflowsPerWorker)} per ${assumptions.workerRssBudgetMiB} MiB worker; ${n(c.workers.workersToCacheEveryDevice)} to cache every device`,
  );
  lines.push('', `Temporal Cloud, a month (${assumptions.pricing.source})`);
  row('actions beyond the plan', usd(c.bill.actions));
  row('storage beyond the plan', usd(c.bill.storage), `${n(c.bill.activeGBh)} GBh active, ${n(c.bill.retainedGBh)} GBh retained`);
  row('plan (greater of minimum and 10 % of usage)', usd(c.bill.plan));
  row('total', usd(c.bill.total));
  lines.push('', 'PostgreSQL');
  row('rows written', `${n(c.postgres.rowsPerSecond)} /s`, `peak ${n(c.postgres.peakRowsPerSecond)} /s`);
  row('commits', `${n(c.postgres.commitsPerSecond)} /s`);
  row('WAL', `${n(c.postgres.walMiBPerSecond)} MiB/s`);
  row(
    'push_registrations / push_pending / ledger',
    `${n(c.postgres.sizeGiB.registrations)} / ${n(c.postgres.sizeGiB.pending)} / ${n(c.postgres.sizeGiB.ledger)} GiB`,
  );
  lines.push('', 'NATS JetStream');
  row(
    'MESSAGE_CREATE events consumed',
    `${n(c.nats.eventsPerSecond)} /s, ${n(c.nats.bytesPerSecond / 1024)} KiB/s`,
    `stream ${n(c.nats.streamGiB)} GiB over ${assumptions.streamMaxAgeDays} days`,
  );
  if (dmLatency.length > 0) {
    const s = (v: number | null) => (v === null ? '—' : `${n(v)} s`);
    lines.push('', "A DM's message → wake (make bench, dm-latency): p50 / p99, paced (the bridge's default) vs not paced");
    for (const r of dmLatency) row(r.what, `${s(r.p50.paced)} / ${s(r.p99.paced)}`, `not paced ${s(r.p50.reference)} / ${s(r.p99.reference)}`);
  }
  lines.push('', 'measured costs from:');
  for (const [field, source] of Object.entries(sources)) lines.push(`  ${field.padEnd(30)} ${source}`);
  if (check !== undefined) {
    lines.push('', "the model against the bench's own runs:");
    if (check.length === 0) lines.push('  (the results file has no fan-out or live-traffic section)');
    for (const r of check)
      lines.push(
        `  ${r.what.padEnd(80)} predicted ${n(r.predicted)} ${r.unit}, measured ${n(r.measured)} ${r.unit} (${n(r.predicted / r.measured)}×)`,
      );
  }
  return lines.join('\n');
}

/**
 * The capacity command's command line: the workload (each parameter with its default), the
 * assumptions a flag may override, the results file, --check and --json. The flags and their
 * defaults are what docs/capacity.md documents.
 */
import path from 'node:path';
import { projectRoot } from '../src/process/paths.js';
import { defaultAssumptions, type Assumptions, type CloudPricing, type Workload } from './model.js';

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
    '  --results FILE                 the measured costs (default bench/results/summary.json)',
    "  --check                        also the model against the bench's own fan-out and busy channel",
    '  --json                         everything as JSON',
  ].join('\n');
}

/** The command line, over the published prices (`pricing`) unless a flat price replaces them. */
export function parseArgs(
  argv: readonly string[],
  pricing: CloudPricing,
): { workload: Workload; assumptions: Assumptions; results: string; check: boolean; json: boolean } {
  const values = new Map<string, number>();
  let results = path.join(projectRoot, 'bench', 'results', 'summary.json');
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
  const assumption = <K extends keyof typeof defaultAssumptions>(key: K) => (values.get(key) ?? defaultAssumptions[key]) as Assumptions[K];
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
        ? pricing
        : {
            ...pricing,
            source: `a flat $${flat} per million actions (--price-per-million-actions)`,
            actionTiers: [[Number.POSITIVE_INFINITY, flat]],
          },
  };
  return { workload, assumptions, results, check, json };
}

/** A command-line mistake, or --help: the message is for the caller, and the exit status 2. */
export class UsageError extends Error {}

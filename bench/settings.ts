/**
 * Sizes of every measurement. The default, `BENCH_SCALE=full`, is the sizes docs/benchmarks.md
 * reports (`full` below: fan-outs to 1,000 and 10,000 devices, a million registrations…);
 * `BENCH_SCALE=small` shrinks them for a quick development run. `BENCH_ONLY=fan-out,…` runs
 * a subset (the names of `measurementNames`). `BENCH_REPEAT=3` runs the selection three times,
 * each on fresh stacks, and reports each figure's median with its spread (min–max). The benchmark's own knobs, so read here (bench/
 * is outside the services' configuration).
 */
export const measurementNames = [
  'claim',
  'wake-path',
  'bridge-sql',
  'fan-out',
  'fan-out-churn',
  'drain-api',
  'live-traffic',
  'worker-memory',
  'fcm-budget',
  'sweep',
  'outage-recovery',
  'scale',
  'fan-out-server',
  'dm-latency',
  'dm-latency-server',
  'wake-to-drain',
  'first-wake',
  'first-wake-server',
] as const;
export type MeasurementName = (typeof measurementNames)[number];

export interface BenchSettings {
  readonly scale: 'full' | 'small';
  readonly only: ReadonlySet<MeasurementName>;
  /** Runs of the selection, each on fresh stacks (`BENCH_REPEAT`). */
  readonly repeat: number;
  readonly claim: { readonly devices: number; readonly rounds: number };
  readonly wakePath: { readonly devices: number };
  /** Devices of the server channels woken by one message. */
  readonly fanOut: { readonly sizes: readonly number[]; readonly deadlineMs: (devices: number) => number };
  /** Small channels' messages one at a time, against the engine ceiling's rounds (bench/measure/first-wake.ts). */
  readonly firstWake: { readonly samples: number; readonly members: number };
  /** A channel's messages while a share of its members log out and back in (bench/measure/fan-out-churn.ts). */
  readonly fanOutChurn: {
    readonly members: number;
    readonly churnShare: number;
    readonly messages: number;
    readonly messageEveryMs: number;
    /** Members logging out and in at once. */
    readonly concurrency: number;
    /** After the last message. */
    readonly deadlineMs: number;
  };
  /**
   * DMs during fan-outs of these sizes and beside a lively channel, one every `dmEveryMs`, a
   * small server's message every `smallEveryMs`; DMs on an idle stack first. The product's
   * processes run as `replicas` (the signaller paces for all of them).
   */
  readonly dmLatency: {
    readonly sizes: readonly number[];
    readonly idleDms: number;
    readonly dmEveryMs: number;
    readonly smallEveryMs: number;
    /** A fan-out is measured until its last wake or this long, whichever comes first. */
    readonly windowMs: (devices: number) => number;
    /** A channel of `members` devices that drain every wake at once, a message every `messageEveryMs` for `durationMs`. */
    readonly lively: { readonly members: number; readonly messageEveryMs: number; readonly durationMs: number };
    readonly replicas: { readonly bridges: number; readonly apis: number };
  };
  readonly bridgeSql: { readonly recipients: number; readonly repeats: number };
  readonly drainApi: { readonly devices: number; readonly concurrency: number; readonly rounds: number; readonly channelsPerDevice: number };
  readonly liveTraffic: {
    readonly durationMs: number;
    readonly busyDevices: number;
    readonly quietDevices: number;
    readonly quietEveryMs: number;
    readonly idleDevices: number;
  };
  readonly workerMemory: { readonly steps: readonly number[] };
  /** Devices woken and drained, rounds of a DM each then a channel message (bench/measure/wake-to-drain.ts). */
  readonly wakeToDrain: { readonly devices: number; readonly rounds: number };
  /** Busy channel through FCM on the time-skipping server: devices, workflow time per setting, a DM per device this often. */
  readonly fcmBudget: { readonly devices: number; readonly durationMs: number; readonly dmEveryMs: number };
  /** Registrations the maintenance sweep passes over; rounds after a warm-up. */
  readonly sweep: { readonly registrations: number; readonly rounds: number };
  /** Registrations held back by one outage whose end clears them; the old query's time cap. */
  readonly outageRecovery: { readonly registrations: number; readonly referenceCapMs: number };
  /** PostgreSQL at a million registrations, and registration churn (bench/measure/scale-*.ts). */
  readonly atScale: {
    /** Registrations (and users, each with one device) loaded with `INSERT … SELECT generate_series`. */
    readonly registrations: number;
    /** Sizes of the server channels whose message the bridge records (members = recipients + the author). */
    readonly channelSizes: readonly number[];
    readonly bridgeRepeats: number;
    /** `push_pending` rows per registration (three channels of its background server). */
    readonly pendingPerRegistration: number;
    /** Rows in the counted-events ledger. */
    readonly ledgerRows: number;
    /** Devices drained one after another (each side), and the maintenance runs a full pass may take at most. */
    readonly drainDevices: number;
    readonly maintenanceMaxRuns: number;
    /** Registration churn: devices registered through the api, at this concurrency; devices woken once for history sizes. */
    readonly churnDevices: number;
    readonly churnConcurrency: number;
    readonly wakeSample: number;
  };
}

const full: Omit<BenchSettings, 'only' | 'repeat'> = {
  scale: 'full',
  claim: { devices: 200, rounds: 20 },
  wakePath: { devices: 30 },
  // Generous: the 10,000-device run is reported as it went, finished or not.
  fanOut: { sizes: [200, 1_000, 10_000], deadlineMs: (devices) => Math.max(60_000, devices * 60) },
  firstWake: { samples: 30, members: 5 },
  fanOutChurn: { members: 1_000, churnShare: 0.2, messages: 5, messageEveryMs: 1_000, concurrency: 8, deadlineMs: 240_000 },
  dmLatency: {
    sizes: [1_000, 10_000],
    idleDms: 20,
    dmEveryMs: 500,
    smallEveryMs: 5_000,
    windowMs: (devices) => (devices > 1_000 ? 240_000 : 120_000),
    lively: { members: 10_000, messageEveryMs: 2_000, durationMs: 120_000 },
    replicas: { bridges: 2, apis: 2 },
  },
  bridgeSql: { recipients: 10_000, repeats: 11 },
  drainApi: { devices: 500, concurrency: 32, rounds: 4, channelsPerDevice: 3 },
  liveTraffic: { durationMs: 5 * 60_000, busyDevices: 20, quietDevices: 5, quietEveryMs: 20_000, idleDevices: 5 },
  workerMemory: { steps: [1_000, 2_000] },
  wakeToDrain: { devices: 100, rounds: 5 },
  fcmBudget: { devices: 3, durationMs: 3_600_000, dmEveryMs: 10 * 60_000 },
  sweep: { registrations: 1_000_000, rounds: 2 },
  outageRecovery: { registrations: 1_000_000, referenceCapMs: 60_000 },
  atScale: {
    registrations: 1_000_000,
    channelSizes: [10_000, 100_000],
    bridgeRepeats: 11,
    pendingPerRegistration: 3,
    ledgerRows: 1_000_000,
    drainDevices: 300,
    maintenanceMaxRuns: 6,
    churnDevices: 2_000,
    churnConcurrency: 16,
    wakeSample: 50,
  },
};

const small: Omit<BenchSettings, 'only' | 'repeat'> = {
  scale: 'small',
  claim: { devices: 100, rounds: 5 },
  wakePath: { devices: 10 },
  fanOut: { sizes: [200, 1_000], deadlineMs: (devices) => Math.max(60_000, devices * 60) },
  firstWake: { samples: 10, members: 5 },
  fanOutChurn: { members: 200, churnShare: 0.2, messages: 5, messageEveryMs: 1_000, concurrency: 8, deadlineMs: 120_000 },
  dmLatency: {
    sizes: [1_000],
    idleDms: 20,
    dmEveryMs: 500,
    smallEveryMs: 5_000,
    windowMs: () => 120_000,
    lively: { members: 1_000, messageEveryMs: 2_000, durationMs: 30_000 },
    replicas: { bridges: 2, apis: 2 },
  },
  bridgeSql: { recipients: 1_000, repeats: 3 },
  drainApi: { devices: 100, concurrency: 16, rounds: 2, channelsPerDevice: 3 },
  liveTraffic: { durationMs: 60_000, busyDevices: 5, quietDevices: 3, quietEveryMs: 20_000, idleDevices: 3 },
  workerMemory: { steps: [250, 500] },
  wakeToDrain: { devices: 20, rounds: 2 },
  fcmBudget: { devices: 2, durationMs: 25 * 60_000, dmEveryMs: 5 * 60_000 },
  sweep: { registrations: 100_000, rounds: 1 },
  outageRecovery: { registrations: 100_000, referenceCapMs: 20_000 },
  atScale: {
    registrations: 100_000,
    channelSizes: [1_000, 10_000],
    bridgeRepeats: 3,
    pendingPerRegistration: 3,
    ledgerRows: 100_000,
    drainDevices: 100,
    maintenanceMaxRuns: 3,
    churnDevices: 300,
    churnConcurrency: 16,
    wakeSample: 10,
  },
};

export function loadBenchSettings(env: Readonly<Record<string, string | undefined>> = process.env): BenchSettings {
  const scale = env.BENCH_SCALE ?? 'full';
  if (scale !== 'full' && scale !== 'small') throw new Error(`BENCH_SCALE must be full or small (got "${scale}")`);
  const names = (env.BENCH_ONLY ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  for (const name of names) {
    if (!(measurementNames as readonly string[]).includes(name))
      throw new Error(`BENCH_ONLY: unknown measurement "${name}" (known: ${measurementNames.join(', ')})`);
  }
  const only = new Set((names.length === 0 ? measurementNames : names) as MeasurementName[]);
  const repeat = Number(env.BENCH_REPEAT ?? '1');
  if (!Number.isInteger(repeat) || repeat < 1 || repeat > 10)
    throw new Error(`BENCH_REPEAT must be an integer from 1 to 10 (got "${env.BENCH_REPEAT}")`);
  return { ...(scale === 'small' ? small : full), only, repeat };
}

/**
 * The capacity model of docs/capacity.md: from what `make bench` measured per wake, per
 * registration and per message (history events, billable actions, bytes, workflow tasks,
 * PostgreSQL writes, worker memory) to what a deployment of a given size needs. Pure
 * arithmetic, no I/O: capacity/command.ts feeds it the measured costs (bench/results/summary.json),
 * the prices (capacity/inputs.json) and the command line;
 * test/unit/capacity/model.test.ts checks it against figures worked out by hand.
 *
 * How wakes follow from messages (docs/design.md, Wakes): a device receives messages at λ per second
 * (Poisson), drains each wake at once, and is woken at most once per interval T. After a wake
 * the next one comes at the first message after it, but not before T: a cycle lasts
 * E[max(X, T)] = T + e^{−λT}/λ for X ~ Exp(λ), so a device is woken 1 / (T + e^{−λT}/λ) times a
 * second — λ when messages are rare, 1/T (240 an hour) when they are not. A cycle whose next
 * message came inside T (probability 1 − e^{−λT}) costs what the bench's busy channel
 * measured per wake; the others what its quiet channel measured.
 */

export interface CycleCost {
  readonly events: number;
  readonly actions: number;
  readonly workflowTasks: number;
  readonly signals: number;
  readonly timersFired: number;
}

/** What the benchmark measured; capacity/measured.ts reads it from bench/results/summary.json. */
export interface Measured {
  /** A wake → drain cycle whose next message came after the interval (bench: the quiet channel). */
  readonly quietCycle: CycleCost;
  /** One whose next message came inside it (bench: the busy channel). */
  readonly busyCycle: CycleCost;
  /** History bytes per event (protobuf), from the wake cycles of the churn measurement. */
  readonly bytesPerEvent: number;
  /** The first `PUT` of a device: start → idle. */
  readonly registration: CycleCost & { readonly bytes: number };
  /** A re-registration `PUT` (every app start): signal → idle, and PostgreSQL's writes (commits: WAL flushes). */
  readonly reregistration: CycleCost & { readonly bytes: number; readonly pgCommits: number; readonly pgRows: number; readonly walBytes: number };
  /** PostgreSQL's writes per wake → drain cycle (claim, send, drain; commits: WAL flushes). */
  readonly wakeWrites: { readonly pgCommits: number; readonly pgRows: number; readonly walBytes: number };
  /** WAL bytes per push_pending row the bridge writes (created or updated). */
  readonly bridgeWalBytesPerRow: number;
  /** Worker RSS: the process with (almost) nothing cached, and per cached workflow. */
  readonly workerBaseRssMiB: number;
  readonly workerRssMiBPerCachedWorkflow: number;
  /** One maintenance run (every 10 minutes). */
  readonly maintenanceRun: { readonly actions: number; readonly events: number };
  /** Table + index size per million rows. */
  readonly mibPerMillion: { readonly registrations: number; readonly pendingRows: number; readonly ledgerRows: number };
  /** A MESSAGE_CREATE event's JSON body. */
  readonly natsEventBytes: number;
}

export interface Workload {
  readonly devices: number;
  /** MESSAGE_CREATE events per second, all channels. */
  readonly messagesPerSecond: number;
  /** Share of those in DMs and group DMs. */
  readonly dmShare: number;
  /** Devices a DM message wakes (the other members' devices). */
  readonly dmAudience: number;
  /** Devices a server-channel message wakes (viewers without a mute, their devices). */
  readonly serverAudience: number;
  readonly appStartsPerDay: number;
  /** New registrations a day (installs, new phones). */
  readonly newDevicesPerDay: number;
  /** Peak hour ÷ average, for what must be provisioned (shards, workers' CPU, PostgreSQL). */
  readonly peakFactor: number;
}

export interface Assumptions {
  /** PUSH_MIN_INTERVAL_MS in seconds. */
  readonly minIntervalSeconds: number;
  /** The registration workflow continues as new after this many wakes (workflows/registration.ts)… */
  readonly continueAsNewAfterWakes: number;
  /** …or when Temporal suggests it, at this many events. */
  readonly continueAsNewEvents: number;
  /** Namespace retention of closed runs. */
  readonly retentionDays: number;
  readonly hoursPerMonth: number;
  /** A worker process's RSS budget. */
  readonly workerRssBudgetMiB: number;
  /** Workflows worth keeping in the workers' caches: those woken in the last this-many seconds. */
  readonly cacheWindowSeconds: number;
  /** Sizing of history shards: open workflows per shard, and state transitions per second per shard. */
  readonly workflowsPerShard: number;
  readonly transitionsPerShardPerSecond: number;
  /** JetStream keeps events this long (the bridge's stream), the ledger this long. */
  readonly streamMaxAgeDays: number;
  readonly ledgerRetentionDays: number;
  /** push_pending rows per device at a time, on average. */
  readonly pendingRowsPerDevice: number;
  readonly pricing: CloudPricing;
}

/**
 * Temporal Cloud, Pay-As-You-Go on the Business plan: the published prices, which change —
 * capacity/inputs.json keeps them with the page and the day they were read.
 */
export interface CloudPricing {
  /** Where the prices come from, as the report prints it: the page and the day it was read. */
  readonly source: string;
  /** [actions in the tier, USD per million]; the last tier is open-ended. */
  readonly actionTiers: readonly (readonly [number, number])[];
  readonly activeStoragePerGBh: number;
  readonly retainedStoragePerGBh: number;
  readonly planMinimumPerMonth: number;
  /** The plan costs the greater of its minimum and this share of the usage. */
  readonly planShareOfUsage: number;
  readonly includedActions: number;
  readonly includedActiveGB: number;
  readonly includedRetainedGB: number;
  /** GB → GBh of the included allocations. */
  readonly gbhPerIncludedGB: number;
}

/**
 * The assumptions the command line may override, without the prices: those are dated data
 * (capacity/inputs.json), read at start-up and added as `pricing`.
 */
export const defaultAssumptions: Omit<Assumptions, 'pricing'> = {
  minIntervalSeconds: 15,
  continueAsNewAfterWakes: 200,
  continueAsNewEvents: 4096,
  retentionDays: 30,
  hoursPerMonth: 730,
  workerRssBudgetMiB: 2048,
  cacheWindowSeconds: 3600,
  // Temporal: clusters run "with each Shard responsible for tens of thousands of Workflow
  // Executions"; 10,000 is the conservative end. A shard serializes its updates; 50 a second
  // is a quarter of what a 5 ms persistence write allows.
  workflowsPerShard: 10_000,
  transitionsPerShardPerSecond: 50,
  streamMaxAgeDays: 3,
  ledgerRetentionDays: 4,
  pendingRowsPerDevice: 1,
};

/** Wakes per second of one device receiving λ messages a second, woken at most once per T seconds. */
export function wakesPerSecond(lambda: number, intervalSeconds: number): number {
  if (lambda <= 0) return 0;
  return 1 / (intervalSeconds + Math.exp(-lambda * intervalSeconds) / lambda);
}

/** The share of cycles whose next message arrived inside the interval. */
export function busyShare(lambda: number, intervalSeconds: number): number {
  return lambda <= 0 ? 0 : 1 - Math.exp(-lambda * intervalSeconds);
}

function blend(a: CycleCost, b: CycleCost, share: number): CycleCost {
  const mix = (key: keyof CycleCost) => a[key] * (1 - share) + b[key] * share;
  return {
    events: mix('events'),
    actions: mix('actions'),
    workflowTasks: mix('workflowTasks'),
    signals: mix('signals'),
    timersFired: mix('timersFired'),
  };
}

/** USD for `actions` in a month, over the tiers. */
export function tieredActionsCost(actions: number, tiers: CloudPricing['actionTiers']): number {
  let left = Math.max(0, actions);
  let cost = 0;
  for (const [size, perMillion] of tiers) {
    const inTier = Math.min(left, size);
    cost += (inTier / 1e6) * perMillion;
    left -= inTier;
    if (left <= 0) break;
  }
  return cost;
}

export interface CloudBill {
  readonly actions: number;
  readonly storage: number;
  readonly plan: number;
  readonly total: number;
}

/** A month on Temporal Cloud: actions and storage beyond the plan's allocations, then the plan. */
export function cloudBill(
  month: { readonly actions: number; readonly activeGBh: number; readonly retainedGBh: number },
  pricing: CloudPricing,
): CloudBill {
  const actions = tieredActionsCost(month.actions - pricing.includedActions, pricing.actionTiers);
  const active = Math.max(0, month.activeGBh - pricing.includedActiveGB * pricing.gbhPerIncludedGB) * pricing.activeStoragePerGBh;
  const retained = Math.max(0, month.retainedGBh - pricing.includedRetainedGB * pricing.gbhPerIncludedGB) * pricing.retainedStoragePerGBh;
  const storage = active + retained;
  const plan = Math.max(pricing.planMinimumPerMonth, pricing.planShareOfUsage * (actions + storage));
  return { actions, storage, plan, total: actions + storage + plan };
}

const nextPowerOfTwo = (n: number) => 2 ** Math.ceil(Math.log2(Math.max(1, n)));

export interface Capacity {
  /** Messages reaching one device per second, its wakes per second, the share of busy cycles. */
  readonly perDevice: {
    readonly messagesPerSecond: number;
    readonly wakesPerSecond: number;
    readonly wakesPerDay: number;
    readonly busyShare: number;
  };
  readonly cycle: CycleCost;
  readonly wakesPerSecond: number;
  readonly temporal: {
    readonly actionsPerSecond: number;
    readonly actionsPerMonth: number;
    /** Where the actions come from, per second. */
    readonly actionsBySource: {
      readonly wakes: number;
      readonly reregistrations: number;
      readonly registrations: number;
      readonly maintenance: number;
    };
    readonly workflowTasksPerSecond: number;
    readonly historyEventsPerSecond: number;
    readonly historyBytesPerSecond: number;
    /** Open runs (every registration's workflow is open) and closed runs within retention. */
    readonly activeStorageGB: number;
    readonly retainedStorageGB: number;
    readonly runDays: number;
    readonly stateTransitionsPerSecondPeak: number;
    readonly historyShards: number;
    readonly historyShardsBy: { readonly workflows: number; readonly transitions: number };
  };
  readonly bill: CloudBill & { readonly activeGBh: number; readonly retainedGBh: number };
  readonly workers: {
    readonly workflowsPerWorker: number;
    readonly cachedWorkflows: number;
    readonly workers: number;
    readonly workersToCacheEveryDevice: number;
  };
  readonly postgres: {
    readonly rowsPerSecond: number;
    readonly commitsPerSecond: number;
    readonly walMiBPerSecond: number;
    readonly peakRowsPerSecond: number;
    readonly sizeGiB: { readonly registrations: number; readonly pending: number; readonly ledger: number };
  };
  readonly nats: { readonly eventsPerSecond: number; readonly bytesPerSecond: number; readonly streamGiB: number };
  readonly sendsPerSecond: number;
}

export function capacity(workload: Workload, measured: Measured, assumptions: Assumptions): Capacity {
  const { devices: d } = workload;
  const t = assumptions.minIntervalSeconds;
  const deliveries = workload.messagesPerSecond * (workload.dmShare * workload.dmAudience + (1 - workload.dmShare) * workload.serverAudience);
  const lambda = d === 0 ? 0 : deliveries / d;
  const perDeviceWakes = wakesPerSecond(lambda, t);
  const share = busyShare(lambda, t);
  const cycle = blend(measured.quietCycle, measured.busyCycle, share);
  const wakes = d * perDeviceWakes;
  const day = 86_400;
  const rereg = (d * workload.appStartsPerDay) / day;
  const registrations = workload.newDevicesPerDay / day;
  const maintenanceRuns = 144 / day;

  const actionsBySource = {
    wakes: wakes * cycle.actions,
    reregistrations: rereg * measured.reregistration.actions,
    registrations: registrations * measured.registration.actions,
    maintenance: maintenanceRuns * measured.maintenanceRun.actions,
  };
  const actionsPerSecond = actionsBySource.wakes + actionsBySource.reregistrations + actionsBySource.registrations + actionsBySource.maintenance;
  const secondsPerMonth = assumptions.hoursPerMonth * 3600;
  const workflowTasksPerSecond =
    wakes * cycle.workflowTasks + rereg * measured.reregistration.workflowTasks + registrations * measured.registration.workflowTasks;
  const historyEventsPerSecond =
    wakes * cycle.events +
    rereg * measured.reregistration.events +
    registrations * measured.registration.events +
    maintenanceRuns * measured.maintenanceRun.events;
  const historyBytesPerSecond = historyEventsPerSecond * measured.bytesPerEvent;

  // One device's run: it grows by its wakes and re-registrations until it continues as new.
  const wakesPerDay = perDeviceWakes * day;
  const eventsPerDay = wakesPerDay * cycle.events + workload.appStartsPerDay * measured.reregistration.events;
  const bytesPerDay = eventsPerDay * measured.bytesPerEvent;
  const runDays = Math.min(
    wakesPerDay > 0 ? assumptions.continueAsNewAfterWakes / wakesPerDay : Number.POSITIVE_INFINITY,
    eventsPerDay > 0 ? assumptions.continueAsNewEvents / eventsPerDay : Number.POSITIVE_INFINITY,
  );
  const openBytes = measured.registration.bytes + (Number.isFinite(runDays) ? (bytesPerDay * runDays) / 2 : 0);
  const activeStorageGB = (d * openBytes) / 1e9;
  // Everything a device's history takes in is kept for the retention period once its run closes.
  const retainedStorageGB = (d * bytesPerDay * assumptions.retentionDays) / 1e9;

  // State transitions: each signal, each workflow task's start and completion, each timer fired.
  const transitionsPerCycle = cycle.signals + 2 * cycle.workflowTasks + cycle.timersFired;
  const transitionsPerSecond =
    wakes * transitionsPerCycle +
    rereg * (measured.reregistration.signals + 2 * measured.reregistration.workflowTasks) +
    registrations * (1 + 2 * measured.registration.workflowTasks);
  const stateTransitionsPerSecondPeak = transitionsPerSecond * workload.peakFactor;
  const byWorkflows = d / assumptions.workflowsPerShard;
  const byTransitions = stateTransitionsPerSecondPeak / assumptions.transitionsPerShardPerSecond;

  const actionsPerMonth = actionsPerSecond * secondsPerMonth;
  const activeGBh = activeStorageGB * assumptions.hoursPerMonth;
  const retainedGBh = retainedStorageGB * assumptions.hoursPerMonth;
  const bill = cloudBill({ actions: actionsPerMonth, activeGBh, retainedGBh }, assumptions.pricing);

  const workflowsPerWorker = Math.max(
    1,
    Math.floor((assumptions.workerRssBudgetMiB - measured.workerBaseRssMiB) / measured.workerRssMiBPerCachedWorkflow),
  );
  const cachedWorkflows = d * (1 - Math.exp(-perDeviceWakes * assumptions.cacheWindowSeconds));

  // PostgreSQL: the bridge writes one pending row per device a message reaches (created or
  // updated) and one ledger row; a wake claims and is drained; re-registrations upsert.
  const bridgeRows = deliveries + workload.messagesPerSecond;
  const rowsPerSecond = bridgeRows + wakes * measured.wakeWrites.pgRows + rereg * measured.reregistration.pgRows + registrations;
  const commitsPerSecond = workload.messagesPerSecond + wakes * measured.wakeWrites.pgCommits + rereg * measured.reregistration.pgCommits;
  const walBytesPerSecond =
    deliveries * measured.bridgeWalBytesPerRow + wakes * measured.wakeWrites.walBytes + rereg * measured.reregistration.walBytes;
  const gib = (rows: number, mibPerMillion: number) => ((rows / 1e6) * mibPerMillion) / 1024;

  return {
    perDevice: { messagesPerSecond: lambda, wakesPerSecond: perDeviceWakes, wakesPerDay, busyShare: share },
    cycle,
    wakesPerSecond: wakes,
    temporal: {
      actionsPerSecond,
      actionsPerMonth,
      actionsBySource,
      workflowTasksPerSecond,
      historyEventsPerSecond,
      historyBytesPerSecond,
      activeStorageGB,
      retainedStorageGB,
      runDays,
      stateTransitionsPerSecondPeak,
      historyShards: nextPowerOfTwo(Math.max(byWorkflows, byTransitions)),
      historyShardsBy: { workflows: byWorkflows, transitions: byTransitions },
    },
    bill: { ...bill, activeGBh, retainedGBh },
    workers: {
      workflowsPerWorker,
      cachedWorkflows,
      workers: Math.max(1, Math.ceil(cachedWorkflows / workflowsPerWorker)),
      workersToCacheEveryDevice: Math.max(1, Math.ceil(d / workflowsPerWorker)),
    },
    postgres: {
      rowsPerSecond,
      commitsPerSecond,
      walMiBPerSecond: walBytesPerSecond / 2 ** 20,
      peakRowsPerSecond: rowsPerSecond * workload.peakFactor,
      sizeGiB: {
        registrations: gib(d, measured.mibPerMillion.registrations),
        pending: gib(d * assumptions.pendingRowsPerDevice, measured.mibPerMillion.pendingRows),
        ledger: gib(workload.messagesPerSecond * day * assumptions.ledgerRetentionDays, measured.mibPerMillion.ledgerRows),
      },
    },
    nats: {
      eventsPerSecond: workload.messagesPerSecond,
      bytesPerSecond: workload.messagesPerSecond * measured.natsEventBytes,
      streamGiB: (workload.messagesPerSecond * measured.natsEventBytes * day * assumptions.streamMaxAgeDays) / 2 ** 30,
    },
    sendsPerSecond: wakes,
  };
}

/**
 * The capacity command's dated inputs, capacity/inputs.json: Temporal Cloud's prices with
 * the page and the day they were read, and the measured costs that stand in for what a results
 * file lacks, each with the `make bench` run it came from. Read and validated once at start-up:
 * a bad file stops the command with one line naming the field, never a silently wrong figure.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { projectRoot } from '../src/process/paths.js';
import type { CloudPricing, Measured } from './model.js';

export const inputsFile: string = path.join(projectRoot, 'capacity', 'inputs.json');

export interface CapacityInputs {
  readonly temporalCloudPricing: CloudPricing;
  readonly measuredDefaults: Measured;
}

export class InputsError extends Error {}

// zod 4's number refuses NaN and ±Infinity: every figure here is a finite count, size or price.
const amount = z.number().nonnegative();
const day = z.iso.date();
const text = z.string().min(1);

/**
 * A volume tier: the cumulative bound where it ends, in millions of actions. The bounds rise,
 * and only the last tier is open (null): tieredActionsCost prices nothing beyond the last tier.
 */
const actionTier = z.strictObject({ upToMillionActions: z.number().positive().nullable(), usdPerMillion: amount, note: text.optional() });

const actionTiers = z
  .array(actionTier)
  .min(1)
  .superRefine((tiers, ctx) => {
    tiers.forEach((tier, i) => {
      const last = i === tiers.length - 1;
      const previous = i === 0 ? 0 : (tiers[i - 1]!.upToMillionActions ?? Number.POSITIVE_INFINITY);
      if (last && tier.upToMillionActions !== null)
        ctx.addIssue({ code: 'custom', path: [i, 'upToMillionActions'], message: 'the last tier must be open-ended (null)' });
      else if (!last && tier.upToMillionActions === null)
        ctx.addIssue({ code: 'custom', path: [i, 'upToMillionActions'], message: 'only the last tier may be open-ended' });
      else if (tier.upToMillionActions !== null && tier.upToMillionActions <= previous)
        ctx.addIssue({ code: 'custom', path: [i, 'upToMillionActions'], message: `must be above the tier before (${previous})` });
    });
  });

// Field order is the model's (CloudPricing, Measured): the --json output lists them in this order.
const temporalCloudPricing = z.strictObject({
  plan: text,
  url: z.url({ protocol: /^https$/ }),
  /** Where the page's text is kept, for reading it as of a day. */
  publishedIn: text,
  readOn: day,
  actionTiers,
  activeStoragePerGBh: amount,
  retainedStoragePerGBh: amount,
  planMinimumPerMonth: amount,
  planShareOfUsage: z.number().min(0).max(1),
  includedActions: amount,
  includedActiveGB: amount,
  includedRetainedGB: amount,
  gbhPerIncludedGB: amount,
});

const cycleCost = { events: amount, actions: amount, workflowTasks: amount, signals: amount, timersFired: amount };
const pgWrites = { pgCommits: amount, pgRows: amount, walBytes: amount };

/** A cost measured by a run of `make bench` (a key of `runs`), in a section of its results. */
const measuredCost = <T extends z.ZodType>(value: T) => z.strictObject({ run: text, section: text, value });

const measuredDefaults = z
  .strictObject({
    runs: z.record(text, z.strictObject({ date: day, command: text, machine: text })),
    costs: z.strictObject({
      quietCycle: measuredCost(z.strictObject(cycleCost)),
      busyCycle: measuredCost(z.strictObject(cycleCost)),
      bytesPerEvent: measuredCost(amount),
      registration: measuredCost(z.strictObject({ ...cycleCost, bytes: amount })),
      reregistration: measuredCost(z.strictObject({ ...cycleCost, bytes: amount, ...pgWrites })),
      wakeWrites: measuredCost(z.strictObject(pgWrites)),
      bridgeWalBytesPerRow: measuredCost(amount),
      workerBaseRssMiB: measuredCost(amount),
      workerRssMiBPerCachedWorkflow: measuredCost(amount),
      maintenanceRun: measuredCost(z.strictObject({ actions: amount, events: amount })),
      mibPerMillion: measuredCost(z.strictObject({ registrations: amount, pendingRows: amount, ledgerRows: amount })),
      // Not measured: the size of the event's JSON, worked out from its fields.
      natsEventBytes: z.strictObject({ derivedFrom: text, value: amount }),
    }),
  })
  .superRefine(({ runs, costs }, ctx) => {
    for (const [name, cost] of Object.entries(costs))
      if ('run' in cost && !Object.hasOwn(runs, cost.run))
        ctx.addIssue({ code: 'custom', path: ['costs', name, 'run'], message: `names no entry of runs ("${cost.run}")` });
  });

const inputsSchema = z.strictObject({ temporalCloudPricing, measuredDefaults });

/** `a.b[2].c`: where in the file the first problem is. */
const fieldPath = (segments: readonly PropertyKey[]) =>
  segments.map((s, i) => (typeof s === 'number' ? `[${s}]` : `${i === 0 ? '' : '.'}${String(s)}`)).join('') || '(the whole file)';

/** The inputs from `file` (default capacity/inputs.json); InputsError names the first bad field. */
export function loadCapacityInputs(file: string = inputsFile): CapacityInputs {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new InputsError(`${file}: ${error instanceof Error ? error.message : String(error)}`);
  }
  const parsed = inputsSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new InputsError(`${file}: ${fieldPath(issue.path)}: ${issue.message}`);
  }
  const { temporalCloudPricing: pricing, measuredDefaults: defaults } = parsed.data;
  const costs = defaults.costs;
  return {
    temporalCloudPricing: cloudPricing(pricing),
    measuredDefaults: {
      quietCycle: costs.quietCycle.value,
      busyCycle: costs.busyCycle.value,
      bytesPerEvent: costs.bytesPerEvent.value,
      registration: costs.registration.value,
      reregistration: costs.reregistration.value,
      wakeWrites: costs.wakeWrites.value,
      bridgeWalBytesPerRow: costs.bridgeWalBytesPerRow.value,
      workerBaseRssMiB: costs.workerBaseRssMiB.value,
      workerRssMiBPerCachedWorkflow: costs.workerRssMiBPerCachedWorkflow.value,
      maintenanceRun: costs.maintenanceRun.value,
      mibPerMillion: costs.mibPerMillion.value,
      natsEventBytes: costs.natsEventBytes.value,
    },
  };
}

/** The model's pricing: the page named as the report prints it, the tiers as sizes (the last one unbounded). */
function cloudPricing(p: z.output<typeof temporalCloudPricing>): CloudPricing {
  const page = new URL(p.url);
  let below = 0;
  const actionTiers = p.actionTiers.map(({ upToMillionActions: upTo, usdPerMillion }): [number, number] => {
    if (upTo === null) return [Number.POSITIVE_INFINITY, usdPerMillion];
    const size = (upTo - below) * 1e6;
    below = upTo;
    return [size, usdPerMillion];
  });
  return {
    source: `${p.plan}: ${page.host}${page.pathname} (${p.publishedIn}, read ${p.readOn})`,
    actionTiers,
    activeStoragePerGBh: p.activeStoragePerGBh,
    retainedStoragePerGBh: p.retainedStoragePerGBh,
    planMinimumPerMonth: p.planMinimumPerMonth,
    planShareOfUsage: p.planShareOfUsage,
    includedActions: p.includedActions,
    includedActiveGB: p.includedActiveGB,
    includedRetainedGB: p.includedRetainedGB,
    gbhPerIncludedGB: p.gbhPerIncludedGB,
  };
}

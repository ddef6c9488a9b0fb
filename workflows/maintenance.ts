/**
 * The maintenance run the `push-maintenance` Schedule starts every 10 minutes
 * (docs/design.md, Pruning): prune what can no longer be woken usefully,
 * heal what slipped, and reconcile Temporal with PostgreSQL both ways. Each step is a scan
 * that works in bounded slices (one activity call each) and keeps its position in PostgreSQL,
 * so a table of any size is covered: in one run when the budget allows, else over the next
 * runs. The result — counts by step, and the steps whose pass goes on next run — is what the
 * Web UI shows for the run.
 *
 * History stays small by construction: at most `slicesPerStep` activity calls per step, seven
 * steps (≈ 6 events a call: well below Temporal's 4,096-event suggestion to continue as new).
 */
import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { SliceInput, SliceResult } from '../activities/maintenance.js';

export type MaintenanceStep =
  'noSession' | 'notReregistered90d' | 'untouchedPendingRows' | 'processedEvents' | 'stranded' | 'orphanWorkflows' | 'missingWorkflows';

export interface MaintenanceInput {
  /** Rows per statement, workflows per Temporal list page (default 1,000). */
  readonly windowSize?: number;
  /** Windows per activity call at most (default 100). */
  readonly windowsPerSlice?: number;
  /** An activity call ends after its current window once this much time has passed (default 20 s). */
  readonly sliceMs?: number;
  /** Activity calls per step and run at most (default 30); the next run goes on from there. */
  readonly slicesPerStep?: number;
  /** Only these steps (default: all, in the order of `steps`). */
  readonly only?: readonly MaintenanceStep[];
}

export interface MaintenanceReport {
  readonly prunedNoSession: number;
  readonly prunedNotReregistered90d: number;
  readonly prunedUntouchedPendingRows: number;
  readonly forgottenProcessedEvents: number;
  readonly healedStranded: number;
  readonly endedOrphanWorkflows: number;
  readonly startedMissingWorkflows: number;
  /** Steps whose pass did not finish in this run's budget: the next run continues them. */
  readonly unfinished: readonly MaintenanceStep[];
}

const activities = proxyActivities<Activities>({
  startToCloseTimeout: '2m',
  retry: { initialInterval: '5s', backoffCoefficient: 2, maximumInterval: '1m', maximumAttempts: 5 },
});

/**
 * In order: workflows without a registration first (so that the workflows this run's pruning
 * tells to end are not counted again as orphans); sessions next (most pruning happens there,
 * leaving less for the rest); missing workflows last (after the pruning, none is started for a
 * registration about to go).
 */
const steps: readonly (readonly [MaintenanceStep, keyof Omit<MaintenanceReport, 'unfinished'>, (input: SliceInput) => Promise<SliceResult>])[] = [
  ['orphanWorkflows', 'endedOrphanWorkflows', activities.endOrphanWorkflows],
  ['noSession', 'prunedNoSession', activities.pruneWithoutSession],
  ['notReregistered90d', 'prunedNotReregistered90d', activities.pruneStale],
  ['untouchedPendingRows', 'prunedUntouchedPendingRows', activities.pruneUntouchedPending],
  ['processedEvents', 'forgottenProcessedEvents', activities.pruneProcessedEvents],
  ['stranded', 'healedStranded', activities.healStranded],
  ['missingWorkflows', 'startedMissingWorkflows', activities.startMissingWorkflows],
];

export async function maintenanceWorkflow(input: MaintenanceInput = {}): Promise<MaintenanceReport> {
  const slice: SliceInput = {
    windowSize: input.windowSize ?? 1_000,
    windowsPerSlice: input.windowsPerSlice ?? 100,
    sliceMs: input.sliceMs ?? 20_000,
  };
  const slicesPerStep = input.slicesPerStep ?? 30;
  const counts = {
    prunedNoSession: 0,
    prunedNotReregistered90d: 0,
    prunedUntouchedPendingRows: 0,
    forgottenProcessedEvents: 0,
    healedStranded: 0,
    endedOrphanWorkflows: 0,
    startedMissingWorkflows: 0,
  };
  const unfinished: MaintenanceStep[] = [];
  for (const [step, count, activity] of steps) {
    if (input.only !== undefined && !input.only.includes(step)) continue;
    for (let slices = 1; ; slices++) {
      const result = await activity(slice);
      counts[count] += result.affected;
      if (result.passComplete) break;
      if (slices >= slicesPerStep) {
        unfinished.push(step);
        break;
      }
    }
  }
  return { ...counts, unfinished };
}

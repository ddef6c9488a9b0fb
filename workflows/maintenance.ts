/**
 * The maintenance run the `push-maintenance` Schedule starts every 10 minutes (design §2
 * "Pruning stale registrations"): prune what can no longer be woken usefully, heal what
 * slipped. Each step works in bounded batches; the result — counts by reason — is what the
 * Web UI shows for the run.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { BatchInput, BatchResult } from '../activities/maintenance.js';

export interface MaintenanceInput {
  /** Rows per batch (default 500). */
  readonly batchSize?: number;
  /** Batches per step and run at most (default 200): a huge backlog is finished by later runs. */
  readonly maxBatches?: number;
}

export interface MaintenanceReport {
  readonly prunedNoSession: number;
  readonly prunedNotReregistered90d: number;
  readonly prunedUntouchedPendingRows: number;
  readonly forgottenProcessedEvents: number;
  readonly healedStranded: number;
}

const activities = proxyActivities<Activities>({
  startToCloseTimeout: '2m',
  retry: { initialInterval: '5s', backoffCoefficient: 2, maximumInterval: '1m', maximumAttempts: 5 },
});

export async function maintenanceWorkflow(input: MaintenanceInput = {}): Promise<MaintenanceReport> {
  const options = { batchSize: input.batchSize ?? 500, maxBatches: input.maxBatches ?? 200 };
  // Sessions first: most pruning happens there, and it leaves less for the other steps.
  const prunedNoSession = await inBatches(activities.pruneWithoutSession, options);
  const prunedNotReregistered90d = await inBatches(activities.pruneStale, options);
  const prunedUntouchedPendingRows = await inBatches(activities.pruneUntouchedPending, options);
  const forgottenProcessedEvents = await inBatches(activities.pruneProcessedEvents, options);
  const healedStranded = await inBatches(activities.healStranded, options);
  return { prunedNoSession, prunedNotReregistered90d, prunedUntouchedPendingRows, forgottenProcessedEvents, healedStranded };
}

/**
 * Runs one step batch after batch until it reports nothing more to do: a keyset scan ends
 * when it returns no cursor, a shrinking scan when a batch comes back short.
 */
async function inBatches(
  step: (input: BatchInput) => Promise<BatchResult>,
  options: { readonly batchSize: number; readonly maxBatches: number },
): Promise<number> {
  let total = 0;
  let afterId: string | undefined;
  for (let batch = 0; batch < options.maxBatches; batch++) {
    const result = await step({ batchSize: options.batchSize, afterId });
    total += result.affected;
    if (result.nextAfterId !== undefined) afterId = result.nextAfterId;
    else if (result.affected < options.batchSize || afterId !== undefined) break;
  }
  return total;
}

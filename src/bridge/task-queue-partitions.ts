/**
 * Whether Temporal serves our task queue in order. The pacer keeps a DM's workflow task behind
 * about `BRIDGE_SIGNAL_BACKLOG_MS` of the work that can wait on the premise that the queue is
 * first in, first out. A queue split into partitions (the server's default is 4) puts each task
 * in a random one, and a DM's task then waits behind whatever its partition holds, however
 * little the whole queue holds (docs/architecture.md, "DMs first"; docs/operations.md,
 * "Temporal server settings"). The bridge reads the partitions at start and every `everyMs`:
 * the count is a gauge, and the log says when it is more than one.
 *
 * What must stay true: a read that fails never stops the bridge or the signals; each change —
 * partitioned, ordered again, unreadable, readable again — is logged once, not at every read.
 */
import type { Client } from '@temporalio/client';
import { errorSummary } from '../observability/error-summary.js';
import type { Logger } from '../observability/log.js';
import { withTimeout } from '../async/with-timeout.js';
import { bridgeMetrics } from './metrics.js';

export interface PartitionWatchDeps {
  readonly temporal: Pick<Client, 'workflowService' | 'options'>;
  readonly taskQueue: string;
  readonly log: Logger;
}

export interface PartitionWatch {
  /** Resolves once the first read has answered or failed (tests wait for it). */
  readonly firstRead: Promise<void>;
  stop(): void;
}

const defaultEveryMs = 10 * 60_000;
const answerTimeoutMs = 10_000;

export function watchTaskQueuePartitions(deps: PartitionWatchDeps, everyMs = defaultEveryMs): PartitionWatch {
  let known: number | undefined;
  let failing = false;
  const read = async (): Promise<void> => {
    let partitions: number;
    try {
      partitions = await workflowTaskQueuePartitions(deps);
    } catch (error) {
      if (!failing)
        deps.log.warn(
          { err: errorSummary(error), taskQueue: deps.taskQueue },
          "could not read the task queue's partitions (ListTaskQueuePartitions): tried again later",
        );
      failing = true;
      return;
    }
    if (failing) deps.log.info({ taskQueue: deps.taskQueue }, "the task queue's partitions can be read again");
    failing = false;
    bridgeMetrics.taskQueuePartitions.set(partitions);
    if (partitions === known) return;
    if (partitions > 1) {
      deps.log.warn(
        { taskQueue: deps.taskQueue, partitions, alert: 'task-queue-partitioned' },
        `Temporal spreads the task queue over ${partitions} partitions and serves it out of order: a DM can wait behind more than the pacing's target. Give it one partition (docs/operations.md, "Temporal server settings")`,
      );
    } else if (known !== undefined && known > 1) {
      deps.log.info({ taskQueue: deps.taskQueue, partitions }, 'the task queue has one partition again: served in order');
    }
    known = partitions;
  };
  const firstRead = read();
  const timer = setInterval(() => void read(), everyMs);
  timer.unref();
  return { firstRead, stop: () => clearInterval(timer) };
}

/** The partitions of the queue's workflow tasks, as the server reports them. */
export async function workflowTaskQueuePartitions(deps: Pick<PartitionWatchDeps, 'temporal' | 'taskQueue'>): Promise<number> {
  const answer = await withTimeout(
    deps.temporal.workflowService.listTaskQueuePartitions({ namespace: deps.temporal.options.namespace, taskQueue: { name: deps.taskQueue } }),
    answerTimeoutMs,
    'ListTaskQueuePartitions: no answer',
  );
  return answer.workflowTaskQueuePartitions?.length ?? 0;
}

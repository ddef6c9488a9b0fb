/** The bridge watches whether Temporal serves the task queue in order: each change said once, a failed read harmless. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { bridgeMetrics } from '../../../src/bridge/metrics.js';
import { watchTaskQueuePartitions, type PartitionWatchDeps } from '../../../src/bridge/task-queue-partitions.js';
import { captureLog } from '../transports/helpers.js';

/** A Temporal client whose ListTaskQueuePartitions answers `answers` in turn: a count of partitions, or an error. */
function temporalAnswering(answers: (number | Error)[]) {
  const calls: unknown[] = [];
  const temporal = {
    options: { namespace: 'pushes' },
    workflowService: {
      listTaskQueuePartitions: async (request: unknown) => {
        calls.push(request);
        const answer = answers.shift() ?? 1;
        if (answer instanceof Error) throw answer;
        return { workflowTaskQueuePartitions: Array.from({ length: answer }, (_, i) => ({ key: `push-wakes/${i}` })) };
      },
    },
  } as unknown as PartitionWatchDeps['temporal'];
  return { temporal, calls };
}

async function gauge(): Promise<number | undefined> {
  return (await bridgeMetrics.taskQueuePartitions.get()).values[0]?.value;
}

afterEach(() => {
  vi.useRealTimers();
  bridgeMetrics.taskQueuePartitions.reset();
});

describe('watchTaskQueuePartitions', () => {
  it('warns once while the queue is partitioned, says when it is ordered again, and shows the count as a gauge', async () => {
    vi.useFakeTimers();
    const { log, lines } = captureLog();
    const { temporal, calls } = temporalAnswering([4, 4, 1, 1]);
    const watch = watchTaskQueuePartitions({ temporal, taskQueue: 'push-wakes', log }, 1_000);
    await watch.firstRead;
    expect(calls[0]).toEqual({ namespace: 'pushes', taskQueue: { name: 'push-wakes' } });
    expect(await gauge()).toBe(4);
    await vi.advanceTimersByTimeAsync(1_000);
    const warnings = lines.map((l) => JSON.parse(l) as { alert?: string; partitions?: number; msg: string });
    expect(warnings.filter((l) => l.alert === 'task-queue-partitioned')).toEqual([expect.objectContaining({ partitions: 4 })]);
    await vi.advanceTimersByTimeAsync(2_000);
    watch.stop();
    expect(await gauge()).toBe(1);
    const messages = lines.map((l) => (JSON.parse(l) as { msg: string }).msg);
    expect(messages.filter((m) => m.includes('one partition again'))).toHaveLength(1);
    expect(lines).toHaveLength(2);
  });

  it('says nothing of a queue with one partition', async () => {
    const { log, lines } = captureLog();
    const watch = watchTaskQueuePartitions({ temporal: temporalAnswering([1]).temporal, taskQueue: 'push-wakes', log }, 60_000);
    await watch.firstRead;
    watch.stop();
    expect(await gauge()).toBe(1);
    expect(lines).toEqual([]);
  });

  it('logs a failing read once, keeps the last count, and says when reads answer again', async () => {
    vi.useFakeTimers();
    const { log, lines } = captureLog();
    const denied = Object.assign(new Error('7 PERMISSION_DENIED: Request unauthorized.'), { code: 7 });
    const { temporal, calls } = temporalAnswering([1, denied, denied, 1]);
    const watch = watchTaskQueuePartitions({ temporal, taskQueue: 'push-wakes', log }, 1_000);
    await watch.firstRead;
    await vi.advanceTimersByTimeAsync(3_000);
    watch.stop();
    expect(calls).toHaveLength(4);
    expect(await gauge()).toBe(1);
    const messages = lines.map((l) => (JSON.parse(l) as { msg: string }).msg);
    expect(messages).toEqual([expect.stringContaining('could not read'), expect.stringContaining('can be read again')]);
  });
});

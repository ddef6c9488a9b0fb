/**
 * The bridge reads from a real Temporal whether the task queue is served in order (one
 * partition): the test stack's server, set up as docs/operations.md asks, has one; a dev server
 * left at the server's default of four gets the warning an operator alerts on.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { stopDaemon } from '../../../devstack/daemons.js';
import { freePort } from '../../../devstack/ports.js';
import { startTemporalDevServer, temporalDaemon } from '../../../devstack/temporal.js';
import { bridgeMetrics } from '../../../src/bridge/metrics.js';
import { watchTaskQueuePartitions, workflowTaskQueuePartitions } from '../../../src/bridge/task-queue-partitions.js';
import { captureLog } from '../../unit/transports/helpers.js';
import '../../support/provided.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

async function clientOf(address: string): Promise<Client> {
  const connection = await Connection.connect({ address });
  cleanups.push(() => connection.close());
  return new Client({ connection });
}

describe("the task queue's partitions, read from Temporal", () => {
  it('are one on the test stack: the bridge says nothing', async () => {
    const temporal = await clientOf(inject('temporalAddress'));
    expect(await workflowTaskQueuePartitions({ temporal, taskQueue: `partitions-${process.pid}` })).toBe(1);
    const { log, lines } = captureLog();
    const watch = watchTaskQueuePartitions({ temporal, taskQueue: `partitions-${process.pid}`, log });
    await watch.firstRead;
    watch.stop();
    expect(lines).toEqual([]);
  });

  it("are four at the server's default: the bridge warns, and the gauge shows them", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'partitions-'));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    const address = await startTemporalDevServer({
      temporal: inject('temporalCli'),
      dir,
      port: await freePort(),
      uiPort: undefined,
      taskQueuePartitions: 4,
    });
    cleanups.push(() => stopDaemon(dir, temporalDaemon));
    const { log, lines } = captureLog();
    const watch = watchTaskQueuePartitions({ temporal: await clientOf(address), taskQueue: 'push-wakes', log });
    await watch.firstRead;
    watch.stop();
    const logged = lines.map((l) => JSON.parse(l) as { alert?: string; partitions?: number; level: number });
    expect(logged).toEqual([expect.objectContaining({ alert: 'task-queue-partitioned', partitions: 4, level: 40 })]);
    expect((await bridgeMetrics.taskQueuePartitions.get()).values[0]?.value).toBe(4);
  });
});

/**
 * Helper process: a worker built by `createWorker` (the production settings: cache, slots)
 * that runs only the trivial ceiling workflow. Its no-op activity notes when it ran; the
 * benchmark collects those times as the engine's "wake" arrivals.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime, type Worker } from '@temporalio/worker';
import { createWorker } from '../../src/testing.js';
import type { CeilingActivities } from '../workflows/ceiling.js';
import { benchTemporalConnection } from '../temporal-connection.js';
import { serveParent } from './ipc.js';

const workflowsPath = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'workflows', 'ceiling.js');

let running: { worker: Worker; run: Promise<void>; connection: NativeConnection } | undefined;
let arrivals: number[] = [];

const activities: CeilingActivities = {
  async noop() {
    arrivals.push(Date.now());
  },
};

serveParent({
  async start(params) {
    const { temporalEnv, taskQueue } = params as { temporalEnv: Record<string, string>; taskQueue: string };
    Runtime.install({ logger: new DefaultLogger('WARN') });
    const bundle = await bundleWorkflowCode({ workflowsPath, logger: new DefaultLogger('WARN') });
    const connection = await NativeConnection.connect(benchTemporalConnection(temporalEnv));
    const worker = await createWorker({ connection, namespace: 'default', taskQueue, activities, overrides: { workflowBundle: bundle } });
    running = { worker, connection, run: worker.run() };
  },
  async count() {
    return arrivals.length;
  },
  /** The arrival times (ms since the epoch) since the last call, which forgets them. */
  async take() {
    const taken = arrivals;
    arrivals = [];
    return taken;
  },
  async stop() {
    if (running === undefined) return;
    running.worker.shutdown();
    await running.run;
    await running.connection.close();
    running = undefined;
  },
});

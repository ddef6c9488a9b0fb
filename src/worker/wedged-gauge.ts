/**
 * `push_workflows_wedged{workflow_type}`: the running workflows of this task queue that Temporal
 * flags for workflow tasks failing or timing out again and again (temporal/wedged-workflows.ts),
 * read from visibility when Prometheus scrapes the worker — one count per workflow type, cached
 * `cacheMs`, so a scrape costs two index lookups whatever the fleet's size. A registration
 * workflow counted here wakes its phone no more until it is restarted (`push-admin restart
 * --wedged`) or a worker that can run it is deployed.
 */
import type { Client } from '@temporalio/client';
import { Gauge } from 'prom-client';
import { registry } from '../observability/metrics.js';
import { maintenanceWorkflowType, registrationWorkflowType } from '../../temporal/names.js';
import { countWedged } from '../../temporal/wedged-workflows.js';
import { collectFailures } from './registration-gauges.js';

const workflowTypes = [registrationWorkflowType, maintenanceWorkflowType] as const;

let source: (() => Promise<ReadonlyMap<string, number> | undefined>) | undefined;

const wedged = new Gauge({
  name: 'push_workflows_wedged',
  help: 'Running workflows whose workflow task fails or times out again and again (Temporal flags them: TemporalReportedProblems), by type, read from visibility at scrape time. They make no progress: push-admin restart --wedged.',
  labelNames: ['workflow_type'] as const,
  registers: [registry],
  async collect() {
    const counts = await source?.();
    for (const [workflowType, count] of counts ?? []) this.set({ workflow_type: workflowType }, count);
  },
});

/** Serves the gauge from `client`'s visibility until the returned function is called. */
export function attachWedgedGauge(client: Client, taskQueue: string, options: { readonly cacheMs?: number } = {}): () => void {
  const cacheMs = options.cacheMs ?? 30_000;
  let cached: { at: number; counts: Promise<ReadonlyMap<string, number> | undefined> } | undefined;
  const read = () => {
    if (cached === undefined || Date.now() - cached.at > cacheMs) cached = { at: Date.now(), counts: countAll(client, taskQueue) };
    return cached.counts;
  };
  source = read;
  return () => {
    if (source === read) source = undefined;
    wedged.reset();
  };
}

async function countAll(client: Client, taskQueue: string): Promise<ReadonlyMap<string, number> | undefined> {
  try {
    const counts = await Promise.all(workflowTypes.map(async (type) => [type, await countWedged(client, taskQueue, type)] as const));
    return new Map(counts);
  } catch {
    collectFailures.inc();
    return undefined;
  }
}

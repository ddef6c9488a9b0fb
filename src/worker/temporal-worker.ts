/**
 * Builds the Temporal worker: workflows from the prebuilt bundle when `npm run build` made one
 * (fast start in production), else bundled from source; activities from their dependencies.
 * `buildWorker` is the one place the worker, its activities and their dependencies are put
 * together — the worker process, the tests and the benches all call it.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import type { TemporalSettings } from '../config/index.js';
import { projectRoot } from '../process/paths.js';
import { StartupError } from '../process/startup-error.js';
import { withTimeout } from '../async/with-timeout.js';
import { explainTemporalFailure, temporalConnectionOptions } from '../../temporal/connection.js';
import { tracedActivityInterceptors, workflowSpanSinks, workflowTracingModulePath } from '../../temporal/tracing.js';
import { createActivities, type ActivityDeps } from '../../activities/index.js';
import type { Tracing } from '../tracing/index.js';

export const workflowsSourcePath = path.join(projectRoot, 'workflows', 'index.ts');
/**
 * The prebuilt bundles: without the tracing interceptors, and with them for a worker whose
 * tracing is on. Merely having them in the bundle costs every new workflow instance's first
 * activation about 12 ms of the workflow thread (`make bench`, first-wake) — paid on every wake
 * of a device whose workflow is not cached — so a worker that does not trace runs without.
 * Either replays the other's histories: for an untraced run the interceptors pass every call
 * through unchanged, and for a traced one they add only headers and spans, no commands.
 */
export const workflowBundlePath = path.join(projectRoot, 'dist', 'workflow-bundle.js');
export const tracedWorkflowBundlePath = path.join(projectRoot, 'dist', 'workflow-bundle-traced.js');

export interface CreateWorkerOptions {
  readonly connection: NativeConnection;
  readonly namespace: string;
  readonly taskQueue: string;
  readonly activities: object;
  /** Overrides for tests (cache size, concurrency, identity…). */
  readonly overrides?: Partial<WorkerOptions>;
  /** Bundle the workflows from source even when a prebuilt bundle exists (tests of the code as it is now). */
  readonly fromSource?: boolean;
  /** Where the spans of traced workflows and activities go (temporal/tracing.ts); none: dropped. */
  readonly tracing?: Tracing;
}

/** The registration worker: `createWorker` with this service's activities, built from their dependencies. */
export interface BuildWorkerOptions extends ActivityDeps, Omit<CreateWorkerOptions, 'activities' | 'taskQueue'> {}

export async function buildWorker(options: BuildWorkerOptions): Promise<Worker> {
  const { connection, namespace, overrides, fromSource, tracing, ...deps } = options;
  return createWorker({
    connection,
    namespace,
    taskQueue: deps.taskQueue,
    activities: createActivities(deps),
    ...(overrides === undefined ? {} : { overrides }),
    ...(fromSource === undefined ? {} : { fromSource }),
    ...(tracing === undefined ? {} : { tracing }),
  });
}

/** The workflow interceptor modules of a tracing worker: its prebuilt bundle holds them, a bundle from source is given them. */
export const tracedWorkflowInterceptorModules: readonly string[] = [workflowTracingModulePath];

export async function createWorker(options: CreateWorkerOptions): Promise<Worker> {
  const traced = options.tracing !== undefined;
  const bundlePath = traced ? tracedWorkflowBundlePath : workflowBundlePath;
  const workflows: Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath'> =
    options.fromSource !== true && existsSync(bundlePath) ? { workflowBundle: { codePath: bundlePath } } : { workflowsPath: workflowsSourcePath };
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    ...workflows,
    interceptors: {
      activity: [tracedActivityInterceptors],
      ...('workflowsPath' in workflows && traced ? { workflowModules: [...tracedWorkflowInterceptorModules] } : {}),
    },
    sinks: workflowSpanSinks(options.tracing),
    activities: options.activities,
    // Each cached registration workflow costs memory; the default grows with the heap.
    maxCachedWorkflows: 2_000,
    maxConcurrentActivityTaskExecutions: 100,
    maxConcurrentLocalActivityExecutions: 100,
    shutdownGraceTime: '20s',
    ...options.overrides,
  });
}

/**
 * The worker's connection to the frontend, or a StartupError saying in one line why there is
 * none. The SDK's connect has no time limit of its own: a frontend that accepts the TCP
 * connection and never answers the TLS handshake would hold the worker at start, silent.
 */
export async function connectWorker(settings: Pick<TemporalSettings, 'address' | 'tls' | 'apiKey'>, timeoutMs = 20_000): Promise<NativeConnection> {
  const options = temporalConnectionOptions(settings);
  try {
    return await withTimeout(NativeConnection.connect(options), timeoutMs, 'no connection');
  } catch (error) {
    throw new StartupError(await explainTemporalFailure(error, options));
  }
}

/**
 * Starts the Temporal worker process: registration and maintenance workflows, their
 * activities (PostgreSQL, the transports, a Temporal client for signals), the maintenance
 * Schedule, the transports' outage sharing and recovery loop, and the operations listener.
 */
import { createTemporalClient } from '../../temporal/client.js';
import { ensureMaintenanceSchedule } from '../../temporal/schedule.js';
import { buildWorker, connectWorker } from './temporal-worker.js';
import type { Worker } from '@temporalio/worker';
import type { WorkerConfig } from '../config/index.js';
import { checkDatabase } from '../db/check.js';
import { openDatabase } from '../db/verify.js';
import type { Logger } from '../observability/log.js';
import { attachDatabaseGauges } from './registration-gauges.js';
import { attachWedgedGauge } from './wedged-gauge.js';
import { wedgedRunsFlagged } from '../../temporal/wedged-workflows.js';
import type { Client } from '@temporalio/client';
import { installSdkRuntime } from './sdk-runtime.js';
import { startOpsServer } from '../process/health-server.js';
import { createTransports } from '../transports/index.js';
import { originTagSecret } from '../transports/origin-label.js';
import { startOutageCoordinator } from './outage-coordinator.js';
import { startTracing } from '../tracing/index.js';
import { pendingRowTraces } from '../../activities/message-traces.js';
import { endedUnlessStopped } from '../process/lifecycle.js';
import { withTimeout } from '../async/with-timeout.js';
import { errorSummary } from '../observability/error-summary.js';

export interface RunningWorker {
  readonly opsPort: number;
  /** Why the Temporal worker stopped polling, should it stop without `stop` (src/process/lifecycle.ts). */
  readonly ended: Promise<string>;
  stop(): Promise<void>;
}

export async function startWorker(config: WorkerConfig, log: Logger): Promise<RunningWorker> {
  const sdk = installSdkRuntime(config, log); // before the first connection: Core's runtime is process-wide
  const tracing = startTracing(config.tracing, 'worker', log);
  const pool = await openDatabase(config.databaseUrl, log);
  const detachGauges = attachDatabaseGauges(pool);
  const transports = createTransports(config, log, {
    originTagSecret: originTagSecret({ databaseUrl: config.databaseUrl, vapidPrivateKey: config.unifiedPush.vapid?.privateKey }),
  });
  transports.fcmTokens?.keepFresh(); // the expiry gauge and a refused credential show at start, not at the first wake
  const temporal = createTemporalClient(config.temporal);
  const connection = await connectWorker(config.temporal);
  const taskQueue = config.temporal.taskQueue;
  await ensureMaintenanceSchedule(temporal.client, { taskQueue });
  const detachWedged = attachWedgedGauge(temporal.client, taskQueue);
  await warnIfWedgedRunsUnflagged(temporal.client, log);
  const worker = await buildWorker({
    connection,
    namespace: config.temporal.namespace,
    taskQueue,
    pool,
    log,
    policy: config.wakePolicy,
    transports,
    temporal: temporal.client,
    ...(tracing === undefined ? {} : { tracing, messageTraces: pendingRowTraces(pool) }),
  });
  const health = startOutageCoordinator({
    pool,
    transports,
    temporal: temporal.client,
    taskQueue,
    log: log.child({ component: 'outage-coordinator' }),
  });
  let stopping = false;
  const running = worker.run();
  const watch = watchState(worker, () => stopping);
  // run() settles once the worker has shut down, which a failed worker may take long to do: its state says so at once.
  const ended = Promise.race([endedUnlessStopped(running, 'the Temporal worker', () => stopping), watch.left]);
  const ops = await startOpsServer(
    config.http.host,
    config.workerMetricsPort,
    {
      postgres: () => checkDatabase(pool),
      temporal: async () => {
        if (worker.getState() !== 'RUNNING') throw new Error(`worker is ${worker.getState()}`);
      },
    },
    log,
  );
  log.info({ taskQueue, opsPort: ops.port, sdkMetrics: sdk.metricsAddress }, 'worker running');
  return {
    opsPort: ops.port,
    ended,
    async stop() {
      // Stop polling, let in-flight activities and workflow tasks finish, then close.
      stopping = true;
      watch.stop();
      const wasRunning = worker.getState() === 'RUNNING';
      if (wasRunning) worker.shutdown();
      // A worker that failed may never settle run(): what it opened is closed all the same, a little later.
      await (wasRunning ? running : withTimeout(running, 5_000)).catch(() => undefined);
      await health.stop();
      // A failed worker that never settled holds the connection: closing it then fails, and the process exits anyway.
      await connection.close().catch((error: unknown) => {
        if (wasRunning) throw error;
        log.warn({ err: errorSummary(error) }, 'the Temporal connection is still held by the failed worker; leaving it to the exit');
      });
      await temporal.close();
      await transports.close();
      await ops.close();
      detachGauges();
      detachWedged();
      await pool.end();
      await tracing?.shutdown();
      log.info('worker stopped');
    },
  };
}

/**
 * A namespace where Temporal does not flag wedged runs (self-hosted, with
 * `system.numConsecutiveWorkflowTaskProblemsToTriggerSearchAttribute` = 0) leaves
 * `push_workflows_wedged` at 0 whatever happens: say so once, where alerts look.
 */
async function warnIfWedgedRunsUnflagged(client: Client, log: Logger): Promise<void> {
  const flagged = await wedgedRunsFlagged(client).catch(() => undefined);
  if (flagged === false) {
    log.warn(
      { alert: 'wedged-workflows-unflagged' },
      "this Temporal namespace does not flag workflows whose tasks keep failing (TemporalReportedProblems): push_workflows_wedged stays 0 and push-admin wedged lists nothing; set system.numConsecutiveWorkflowTaskProblemsToTriggerSearchAttribute (default 5) in the server's dynamic config",
    );
  }
}

/**
 * Settles `left` with a reason once the Temporal worker is no longer RUNNING without `stopped()`
 * (it FAILED, or shuts down by itself), looking once a second.
 */
function watchState(worker: Pick<Worker, 'getState'>, stopped: () => boolean): { readonly left: Promise<string>; stop(): void } {
  let timer: NodeJS.Timeout | undefined;
  const left = new Promise<string>((resolve) => {
    timer = setInterval(() => {
      const state = worker.getState();
      if (stopped() || state === 'RUNNING' || state === 'INITIALIZED') return;
      clearInterval(timer);
      resolve(`the Temporal worker is ${state}`);
    }, 1_000);
    timer.unref();
  });
  return { left, stop: () => clearInterval(timer) };
}

/**
 * Starts the Temporal worker process: registration and maintenance workflows, their
 * activities (PostgreSQL, the transports, a Temporal client for signals), the maintenance
 * Schedule, the transports' outage sharing and recovery loop, and the operations listener.
 */
import { createTemporalClient } from '../../temporal/client.js';
import { ensureMaintenanceSchedule } from '../../temporal/schedule.js';
import { buildWorker, connectWorker } from '../../temporal/worker.js';
import type { WorkerConfig } from '../config/index.js';
import { checkDatabase } from '../db/check.js';
import { openDatabase } from '../db/verify.js';
import type { Logger } from '../log.js';
import { attachDatabaseGauges } from '../operations/metrics-collectors.js';
import { installSdkRuntime } from '../operations/sdk-runtime.js';
import { startOpsServer } from '../ops-server.js';
import { createTransports } from '../transports/index.js';
import { originTagSecret } from '../transports/origin-label.js';
import { startTransportHealth } from './transport-health.js';
import { startTracing } from '../tracing/index.js';
import { pendingRowTraces } from '../../activities/message-traces.js';
import { endedUnlessStopped } from '../lifecycle.js';

export interface RunningWorker {
  readonly opsPort: number;
  /** Why the Temporal worker stopped polling, should it stop without `stop` (src/lifecycle.ts). */
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
  const health = startTransportHealth({ pool, transports, temporal: temporal.client, taskQueue, log: log.child({ component: 'transport-health' }) });
  let stopping = false;
  const running = worker.run();
  const ended = endedUnlessStopped(running, 'the Temporal worker', () => stopping);
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
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running.catch(() => undefined);
      await health.stop();
      await connection.close();
      await temporal.close();
      await transports.close();
      await ops.close();
      detachGauges();
      await pool.end();
      await tracing?.shutdown();
      log.info('worker stopped');
    },
  };
}

/**
 * The bridge process: PostgreSQL, a lazy Temporal client, NATS, the event bridge (JetStream
 * intake of MESSAGE_CREATE → push_pending → pending signals, and the signaller of owed signals)
 * and the ops listener. Stopping stops pulling, finishes the events in flight, stops the
 * signaller (a standby takes over), then closes the connections.
 */
import { connect } from '@nats-io/transport-node';
import type { BridgeConfig } from '../config/index.js';
import { checkDatabase } from '../db/check.js';
import { openDatabase } from '../db/verify.js';
import { endedUnlessStopped } from '../process/lifecycle.js';
import { StartupError } from '../process/startup-error.js';
import type { Logger } from '../observability/log.js';
import { startOpsServer } from '../process/health-server.js';
import { startTracing } from '../tracing/index.js';
import { createTemporalClient } from '../../temporal/client.js';
import { startEventBridge } from './event-bridge.js';
import { describeNatsFailure, natsConnectionOptions } from './nats-connection.js';
import { watchTaskQueuePartitions } from './task-queue-partitions.js';

export interface RunningBridge {
  readonly opsPort: number;
  /** Why the bridge cannot go on, should its consumer loop or its NATS connection end without `stop` (src/process/lifecycle.ts). */
  readonly ended: Promise<string>;
  stop(): Promise<void>;
}

export async function startBridge(config: BridgeConfig, log: Logger): Promise<RunningBridge> {
  const tracing = startTracing(config.tracing, 'bridge', log);
  const pool = await openDatabase(config.databaseUrl, log);
  const temporal = createTemporalClient(config.temporal);
  const nc = await connect(natsConnectionOptions(config.nats, 'zippchat-push-bridge')).catch((error: unknown) => {
    throw new StartupError(describeNatsFailure(error));
  });
  const bridge = await startEventBridge(
    { nc, pool, databaseUrl: config.databaseUrl, temporal: temporal.client, taskQueue: config.temporal.taskQueue, log },
    { startAt: config.bridgeStartAt, signalBacklogMs: config.signalBacklogMs },
  );
  const ops = await startOpsServer(
    config.http.host,
    config.bridgeMetricsPort,
    {
      postgres: () => checkDatabase(pool),
      nats: async () => {
        if (nc.isClosed()) throw new Error('NATS connection closed');
        await nc.flush();
      },
      temporal: () => temporal.check(),
    },
    log,
  );
  // Pacing keeps a DM behind its target only on a queue served in order.
  const partitions =
    config.signalBacklogMs > 0 ? watchTaskQueuePartitions({ temporal: temporal.client, taskQueue: config.temporal.taskQueue, log }) : undefined;
  log.info({ stream: bridge.intake.stream, consumer: bridge.intake.consumer, opsPort: ops.port }, 'bridge running');
  let stopping = false;
  const ended = Promise.race([
    endedUnlessStopped(bridge.consumerLoop, 'the JetStream consumer loop', () => stopping),
    // Reconnects are unbounded: the connection closes by itself only when NATS refuses us for good.
    endedUnlessStopped(nc.closed(), 'the NATS connection (closed for good)', () => stopping),
  ]);
  return {
    opsPort: ops.port,
    ended,
    async stop() {
      stopping = true;
      partitions?.stop();
      await bridge.stop();
      await nc.drain();
      await temporal.close();
      await ops.close();
      await pool.end();
      await tracing?.shutdown();
      log.info('bridge stopped');
    },
  };
}

/**
 * Starts the bridge process: NATS JetStream intake of MESSAGE_CREATE events. The durable
 * stream and consumer are ensured here so that events published while the bridge is down
 * wait for it.
 */
import { connect, type NatsConnection } from 'nats';
import { sql } from 'slonik';
import type { Config } from '../config/index.js';
import { createDatabasePool } from '../db/pool.js';
import type { Logger } from '../log.js';
import { startOpsServer } from '../ops-server.js';
import { createTemporalClient } from '../../temporal/client.js';
import { ensureIntake } from './intake.js';

export interface RunningBridge {
  readonly opsPort: number;
  stop(): Promise<void>;
}

export async function startBridge(config: Config, log: Logger): Promise<RunningBridge> {
  const pool = await createDatabasePool(config.databaseUrl);
  const temporal = createTemporalClient(config.temporal);
  const nc: NatsConnection = await connect({ servers: [...config.natsServers], name: 'zippchat-push-bridge', maxReconnectAttempts: -1 });
  const intake = await ensureIntake(nc);
  const ops = await startOpsServer(config.http.host, config.bridgeMetricsPort, {
    postgres: async () => void (await pool.query(sql.unsafe`SELECT 1`)),
    nats: async () => {
      if (nc.isClosed()) throw new Error('NATS connection closed');
      await nc.flush();
    },
    temporal: () => temporal.check(),
  });
  log.info({ stream: intake.stream, consumer: intake.consumer, opsPort: ops.port }, 'bridge running');
  return {
    opsPort: ops.port,
    async stop() {
      await nc.drain();
      await temporal.close();
      await ops.close();
      await pool.end();
      log.info('bridge stopped');
    },
  };
}

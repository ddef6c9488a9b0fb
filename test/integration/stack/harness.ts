/**
 * The running product for the product tests, in this process, against the integration tier's
 * PostgreSQL, NATS and Temporal: the api (test/support/api.ts), a real worker whose FCM is the
 * dev stack's local FCM stand-in, and a bridge on a stream, consumer and subject prefix of
 * this file's own. Everything on one task queue of its own.
 */
import { randomBytes } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { inject } from 'vitest';
import { startEventBridge, type EventBridge } from '../../../src/bridge/event-bridge.js';
import { loadConfig } from '../../../src/config/index.js';
import { defaultBacklogMs } from '../../../src/config/sections/pacing.js';
import { createServiceAccount } from '../../../devstack/stand-ins/google-oauth.js';
import { startLocalFcm, type LocalFcm } from '../../../devstack/stand-ins/local-fcm.js';
import { createLogger } from '../../../src/observability/log.js';
import { createTransports } from '../../../src/transports/index.js';
import { buildWorker } from '../../../src/worker/temporal-worker.js';
import { startTestApi, type TestApi } from '../../support/api.js';
import type { TestDatabase } from '../../support/database.js';
import '../../support/provided.js';

export interface ProductHarness {
  readonly api: TestApi;
  readonly fcm: LocalFcm;
  readonly client: Client;
  readonly nc: NatsConnection;
  readonly taskQueue: string;
  readonly subjectPrefix: string;
  close(): Promise<void>;
}

let runtimeInstalled = false;

export async function productHarness(db: TestDatabase, options: { readonly bridge?: boolean } = {}): Promise<ProductHarness> {
  if (!runtimeInstalled) {
    runtimeInstalled = true;
    Runtime.install({ logger: new DefaultLogger('ERROR') });
  }
  const tag = randomBytes(4).toString('hex');
  const taskQueue = `product-${tag}`;
  const subjectPrefix = `product-${tag}.`;
  const account = createServiceAccount('zippchat-product');
  const fcm = await startLocalFcm({ account });
  const fcmEnv = { FCM_PROJECT_ID: account.projectId, FCM_CREDENTIALS_JSON: account.keyFile(fcm.tokenUrl), FCM_ENDPOINT: fcm.url };
  const api = await startTestApi({
    db,
    taskQueue,
    env: { FCM_PROJECT_ID: 'zippchat-product', PUSH_UP_ALLOW_PRIVATE: 'true', PUSH_UP_ALLOW_HTTP: 'true' },
    // Registrations' starts paced as in production (a worker runs on this task queue); with the
    // bridge below, whichever of the two signallers holds the lock sends them.
    signaller: { backlogMs: defaultBacklogMs },
  });
  const connection = await Connection.connect({ address: inject('temporalAddress') });
  const client = new Client({ connection });
  const worker = await startWorker(db, taskQueue, client, fcmEnv);
  const nc = await connect({ servers: inject('natsUrl') });
  let bridge: EventBridge | undefined;
  if (options.bridge !== false) {
    bridge = await startEventBridge(
      { nc, pool: db.pool, databaseUrl: db.url, temporal: client, taskQueue, log: createLogger({ level: 'silent', name: 'product-bridge' }) },
      {
        subjectPrefix,
        stream: `PRODUCT_${tag}`,
        consumer: `product-${tag}`,
        retry: { baseDelayMs: 100, maxDelayMs: 1_000 },
        signalBacklogMs: defaultBacklogMs,
        signaller: { lock: { retryMs: 200 } },
      },
    );
  }
  return {
    api,
    fcm,
    client,
    nc,
    taskQueue,
    subjectPrefix,
    async close() {
      await bridge?.stop();
      await (await jetstreamManager(nc)).streams.delete(`PRODUCT_${tag}`).catch(() => undefined);
      await nc.close();
      await worker.stop();
      await api.close();
      await connection.close();
      await fcm.close();
    },
  };
}

async function startWorker(db: TestDatabase, taskQueue: string, client: Client, env: Record<string, string>) {
  const config = loadConfig('worker', { DATABASE_URL: db.url, PUSH_UP_ALLOW_PRIVATE: 'true', PUSH_UP_ALLOW_HTTP: 'true', ...env });
  const log = createLogger({ level: 'silent', name: 'product-worker' });
  const transports = createTransports(config, log, { unifiedPushDeadlineMs: 2_000 });
  const connection = await NativeConnection.connect({ address: inject('temporalAddress') });
  const worker = await buildWorker({
    connection,
    namespace: 'default',
    taskQueue,
    pool: db.pool,
    log,
    policy: config.wakePolicy,
    transports,
    temporal: client,
    overrides: { maxCachedWorkflows: 100, shutdownGraceTime: '2s' },
  });
  const running = worker.run();
  return {
    async stop() {
      worker.shutdown();
      await running;
      await connection.close();
      await transports.close();
    },
  };
}

/**
 * A real worker in the test process against the integration tier's Temporal dev server: the
 * production workflows and activities, real PostgreSQL, real transports (allowed to reach a
 * fake distributor on loopback) and their outage loop, on a task queue of its own.
 */
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, type Worker } from '@temporalio/worker';
import { inject } from 'vitest';
import { buildWorker, createLogger, createTransports, loadConfig, startOutageCoordinator, type Transports } from '../../src/testing.js';
import type { TestDatabase } from './database.js';
import './provided.js';

export interface DevWorker {
  readonly client: Client;
  readonly taskQueue: string;
  readonly worker: Worker;
  stop(): Promise<void>;
}

let runtimeInstalled = false;

/** The SDK's process-wide runtime, logging errors only (tests provoke failing tasks on purpose); installed once, before any worker. */
export function quietSdkRuntime(): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  Runtime.install({ logger: new DefaultLogger('ERROR') });
}

export async function connectClient(): Promise<{ client: Client; close(): Promise<void> }> {
  const connection = await Connection.connect({ address: inject('temporalAddress') });
  return { client: new Client({ connection }), close: () => connection.close() };
}

export async function startDevWorker(
  db: TestDatabase,
  options: { taskQueue: string; identity?: string; env?: Record<string, string> },
): Promise<DevWorker> {
  quietSdkRuntime();
  const config = loadConfig('worker', { DATABASE_URL: db.url, PUSH_UP_ALLOW_PRIVATE: 'true', PUSH_UP_ALLOW_HTTP: 'true', ...options.env });
  const log = createLogger({ level: 'silent', name: 'test-worker' });
  const transports: Transports = createTransports(config, log, { unifiedPushDeadlineMs: 2_000 });
  const { client, close: closeClient } = await connectClient();
  const connection = await NativeConnection.connect({ address: inject('temporalAddress') });
  const worker = await buildWorker({
    connection,
    namespace: 'default',
    taskQueue: options.taskQueue,
    pool: db.pool,
    log,
    policy: config.wakePolicy,
    transports,
    temporal: client,
    overrides: { ...(options.identity === undefined ? {} : { identity: options.identity }), maxCachedWorkflows: 100, shutdownGraceTime: '2s' },
  });
  const health = startOutageCoordinator({ pool: db.pool, transports, temporal: client, taskQueue: options.taskQueue, log, intervalMs: 1_000 });
  const running = worker.run();
  return {
    client,
    taskQueue: options.taskQueue,
    worker,
    async stop() {
      worker.shutdown();
      await running;
      await health.stop();
      await connection.close();
      await closeClient();
      await transports.close();
    },
  };
}

/**
 * One bridge replica, given its connections: ensures the JetStream intake, then consumes
 * MESSAGE_CREATE events into `push_pending` rows and `pending` signals. The process entry
 * (index.ts) builds the connections; tests start several replicas in one process.
 */
import type { Client } from '@temporalio/client';
import type { NatsConnection } from '@nats-io/transport-node';
import type { DatabasePool } from 'slonik';
import type { Logger } from '../log.js';
import { startConsumerLoop } from './consumer.js';
import { createEventHandler, type RetryPolicy } from './handle-event.js';
import { ensureIntake, type Intake, type IntakeOptions } from './intake.js';

export interface EventBridgeDeps {
  readonly nc: NatsConnection;
  readonly pool: DatabasePool;
  readonly temporal: Client;
  readonly taskQueue: string;
  readonly log: Logger;
}

export interface EventBridgeOptions extends IntakeOptions {
  /** Events handled at once by this replica. */
  readonly maxInFlight?: number;
  /** Most events of one channel recorded in one transaction. */
  readonly maxBatch?: number;
  /** Signals in flight at once for one event. */
  readonly signalConcurrency?: number;
  /** How long one pull request waits for events (and `stop()` at most for it). */
  readonly pullExpiresMs?: number;
  /** Redelivery delays of failed events. */
  readonly retry?: RetryPolicy;
}

export interface EventBridge {
  readonly intake: Intake;
  /** Stops pulling, finishes the events in flight; the connections stay open (they are the caller's). */
  stop(): Promise<void>;
}

export const defaultRetry: RetryPolicy = { baseDelayMs: 1_000, maxDelayMs: 60_000 };

export async function startEventBridge(deps: EventBridgeDeps, options: EventBridgeOptions = {}): Promise<EventBridge> {
  const intake = await ensureIntake(deps.nc, options);
  const handle = createEventHandler({
    pool: deps.pool,
    announce: { client: deps.temporal, taskQueue: deps.taskQueue, concurrency: options.signalConcurrency ?? 16 },
    log: deps.log,
    subjectPrefix: intake.subjectPrefix,
    retry: options.retry ?? defaultRetry,
    ackWaitMs: intake.ackWaitMs,
    maxBatch: options.maxBatch ?? 64,
  });
  const consumer = await startConsumerLoop(
    deps.nc,
    intake,
    handle,
    { maxInFlight: options.maxInFlight ?? 64, pullExpiresMs: options.pullExpiresMs, recover: () => ensureIntake(deps.nc, options) },
    deps.log,
  );
  return { intake, stop: () => consumer.stop() };
}

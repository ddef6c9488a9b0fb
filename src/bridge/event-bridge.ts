/**
 * One bridge replica, given its connections: ensures the JetStream intake, then consumes
 * MESSAGE_CREATE events into `push_pending` rows and `pending` signals — a DM's at once, a server
 * channel's owed in the signal outbox — and runs a signaller (signaller.ts: the one replica
 * holding its lock sends what is owed, paced). The process entry (index.ts) builds the
 * connections; tests start several replicas in one process.
 */
import type { Client } from '@temporalio/client';
import type { NatsConnection } from '@nats-io/transport-node';
import type { DatabasePool } from 'slonik';
import { processedEventRetentionMs } from '../../domain/retention.js';
import type { Logger } from '../observability/log.js';
import { startConsumerLoop } from './consumer.js';
import { createEventHandler, type RetryPolicy } from './handle-event.js';
import { ensureIntake, type Intake, type IntakeOptions } from './intake.js';
import { startSignaller, type Signaller, type SignallerOptions } from './signaller.js';

export interface EventBridgeDeps {
  readonly nc: NatsConnection;
  readonly pool: DatabasePool;
  /** For the signaller's lock, a connection of its own. */
  readonly databaseUrl: string;
  readonly temporal: Client;
  readonly taskQueue: string;
  readonly log: Logger;
}

export interface EventBridgeOptions extends IntakeOptions {
  /** Events handled at once by this replica. */
  readonly maxInFlight?: number;
  /** Most events of one channel recorded in one transaction. */
  readonly maxBatch?: number;
  /** Signals in flight at once for one DM's event, and the signaller's. */
  readonly signalConcurrency?: number;
  /**
   * The signaller paces what it sends (server channels', registrations') so that the workers'
   * backlog stays near this delay (ms; src/pacing/pacer.ts); a DM's signals never wait for it.
   * Absent or 0: not paced.
   */
  readonly signalBacklogMs?: number;
  /** The signaller's other settings (tests shorten them). */
  readonly signaller?: Omit<SignallerOptions, 'backlogMs' | 'concurrency'>;
  /** How long one pull request waits for events (and `stop()` at most for it). */
  readonly pullExpiresMs?: number;
  /** Redelivery delays of failed events. */
  readonly retry?: RetryPolicy;
}

export interface EventBridge {
  readonly intake: Intake;
  readonly signaller: Signaller;
  /** The consumer's pull loop: settles when it has ended (src/bridge/consumer.ts). */
  readonly consumerLoop: Promise<void>;
  /** Stops pulling, finishes the events in flight, stops the signaller; the connections stay open (they are the caller's). */
  stop(): Promise<void>;
}

export const defaultRetry: RetryPolicy = { baseDelayMs: 1_000, maxDelayMs: 60_000 };

/**
 * A consumer that goes missing while the bridge runs is recreated starting this long before
 * it was last seen, so that events then in flight or waiting for a redelivery come again
 * (the ledger counts the ones already counted once).
 */
export const recreatedConsumerOverlapMs = 5 * 60_000;

/**
 * Whether the exactly-once ledger keeps a counted event's id as long as the stream can deliver
 * that event again (a row is written no earlier than its event was published).
 */
export function ledgerOutlivesStream(streamMaxAgeMs: number, ledgerRetentionMs: number): boolean {
  return streamMaxAgeMs > 0 && streamMaxAgeMs <= ledgerRetentionMs;
}

export async function startEventBridge(deps: EventBridgeDeps, options: EventBridgeOptions = {}): Promise<EventBridge> {
  const startedAt = new Date();
  const intake = await ensureIntake(deps.nc, options);
  reportIntake(intake, options, deps.log);
  const concurrency = options.signalConcurrency ?? 16;
  const signaller = startSignaller(
    { pool: deps.pool, databaseUrl: deps.databaseUrl, temporal: deps.temporal, taskQueue: deps.taskQueue, log: deps.log },
    { ...options.signaller, backlogMs: options.signalBacklogMs ?? 0, concurrency },
  );
  const handle = createEventHandler({
    pool: deps.pool,
    signals: { client: deps.temporal, taskQueue: deps.taskQueue, concurrency },
    log: deps.log,
    subjectPrefix: intake.subjectPrefix,
    retry: options.retry ?? defaultRetry,
    ackWaitMs: intake.ackWaitMs,
    maxBatch: options.maxBatch ?? 64,
    owed: () => signaller.poke(),
  });
  const consumer = await startConsumerLoop(
    deps.nc,
    intake,
    handle,
    {
      maxInFlight: options.maxInFlight ?? 64,
      pullExpiresMs: options.pullExpiresMs,
      recover: async (lastSeenAt) => {
        const startAt = new Date((lastSeenAt ?? startedAt).getTime() - recreatedConsumerOverlapMs);
        const recovered = await ensureIntake(deps.nc, { ...options, startAt });
        if (recovered.start.kind !== 'resumed') {
          deps.log.warn(
            { stream: recovered.stream, consumer: recovered.consumer, startAt },
            'JetStream consumer was missing: recreated, starting before it was last seen',
          );
        }
      },
    },
    deps.log,
  );
  return {
    intake,
    signaller,
    consumerLoop: consumer.loop,
    stop: async () => {
      await consumer.stop();
      // What the signaller did not send stays owed: a standby replica's signaller takes over.
      await signaller.stop();
    },
  };
}

/** Says at start where the consumer starts, and whether the ledger outlives the stream's redeliveries. */
function reportIntake(intake: Intake, options: EventBridgeOptions, log: Logger): void {
  const where = { stream: intake.stream, consumer: intake.consumer };
  if (intake.start.kind === 'resumed') {
    log.info(where, 'JetStream consumer exists: resuming where it was');
    if (options.startAt !== undefined)
      log.warn({ ...where, startAt: options.startAt }, 'start time ignored: the consumer exists and resumes where it was');
  } else if (intake.start.kind === 'new-messages') {
    log.info(where, 'JetStream consumer created: starting at messages published from now on');
  } else {
    log.info({ ...where, startAt: intake.start.at }, 'JetStream consumer created: starting at the start time');
  }
  if (!ledgerOutlivesStream(intake.streamMaxAgeMs, processedEventRetentionMs)) {
    log.warn(
      { ...where, streamMaxAgeMs: intake.streamMaxAgeMs, ledgerRetentionMs: processedEventRetentionMs },
      `the stream keeps messages ${intake.streamMaxAgeMs === 0 ? 'regardless of age' : 'longer'} than the exactly-once ledger keeps their ids ` +
        `(${processedEventRetentionMs / 86_400_000} days): an event redelivered later than that would be counted twice. ` +
        'Give the stream a max_age no longer than that',
    );
  }
}

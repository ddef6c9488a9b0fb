/**
 * The bridge's integration harness: real NATS JetStream, PostgreSQL and Temporal. Each test
 * file gets its own subject prefix, stream, consumer and task queue (the NATS and Temporal
 * servers are shared by files running in parallel) and starts bridge replicas in-process, each
 * with its signaller (one of them sends what is owed). No Temporal worker runs: what the bridge
 * told Temporal is read back from workflow histories.
 */
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { pino } from 'pino';
import { sql, type DatabasePool } from 'slonik';
import { inject } from 'vitest';
import { z } from 'zod';
import { startEventBridge, type EventBridge, type EventBridgeOptions } from '../../../src/bridge/event-bridge.js';
import { bridgeMetrics, type EventOutcome } from '../../../src/bridge/metrics.js';
import { waitFor } from '../../../devstack/daemons.js';
import type { Logger } from '../../../src/observability/log.js';
import { registrationWorkflowId } from '../../../temporal/names.js';
import '../../support/provided.js';

export interface MessageEventBody {
  readonly id: string;
  readonly channel_id: string;
  readonly author_id: string;
  readonly created_at: string;
}

/** Collects a logger's JSON lines, so tests can read what was logged. */
export function capturedLogger(): { log: Logger; lines: () => string[] } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(
        ...chunk
          .toString()
          .split('\n')
          .filter((l) => l !== ''),
      );
      done();
    },
  });
  return { log: pino({ level: 'debug' }, sink), lines: () => lines };
}

export interface BridgeHarness {
  readonly nc: NatsConnection;
  readonly temporal: Client;
  readonly taskQueue: string;
  readonly subjectPrefix: string;
  readonly stream: string;
  readonly consumer: string;
  /** Starts a bridge replica on this file's stream and consumer, against `db`. */
  startReplica(db: Database, options?: EventBridgeOptions & { log?: Logger; temporal?: Client }): Promise<EventBridge>;
  publish(event: MessageEventBody, subjectChannel?: string): Promise<void>;
  publishRaw(subject: string, body: Uint8Array | string): Promise<void>;
  /** The consumer's view: nothing waiting, nothing unacknowledged. */
  consumerIdle(): Promise<boolean>;
  /** Every event acknowledged and every signal it owed sent (the outbox of `db` empty). */
  settled(db: Database): Promise<boolean>;
  close(): Promise<void>;
}

export async function bridgeHarness(): Promise<BridgeHarness> {
  const tag = randomBytes(4).toString('hex');
  const subjectPrefix = `test-${tag}.`;
  const stream = `BRIDGE_TEST_${tag}`;
  const consumer = `bridge-test-${tag}`;
  const taskQueue = `bridge-test-${tag}`;
  const nc = await connect({ servers: inject('natsUrl') });
  const connection = await Connection.connect({ address: inject('temporalAddress') });
  const temporal = new Client({ connection });
  const replicas = new Set<EventBridge>();
  const js = jetstream(nc);
  const consumerIdle = async () => {
    const info = await (await jetstreamManager(nc)).consumers.info(stream, consumer);
    return info.num_pending === 0 && info.num_ack_pending === 0;
  };
  return {
    nc,
    temporal,
    taskQueue,
    subjectPrefix,
    stream,
    consumer,
    async startReplica(db, { log = pino({ level: 'silent' }), temporal: client = temporal, ...options } = {}) {
      const replica = await startEventBridge(
        { nc, pool: db.pool, databaseUrl: db.url, temporal: client, taskQueue, log },
        { subjectPrefix, stream, consumer, retry: { baseDelayMs: 100, maxDelayMs: 1_000 }, signaller: quickSignaller, ...options },
      );
      replicas.add(replica);
      return {
        ...replica,
        stop: async () => {
          replicas.delete(replica);
          await replica.stop();
        },
      };
    },
    async publish(event, subjectChannel = event.channel_id) {
      await js.publish(`${subjectPrefix}channel.${subjectChannel}.MESSAGE_CREATE`, JSON.stringify(event));
    },
    async publishRaw(subject, body) {
      await js.publish(`${subjectPrefix}${subject}`, body);
    },
    consumerIdle,
    async settled(db) {
      return (await consumerIdle()) && (await owedRows(db.pool)) === 0;
    },
    async close() {
      for (const replica of replicas) await replica.stop();
      const jsm = await jetstreamManager(nc);
      await jsm.streams.delete(stream).catch(() => undefined);
      await nc.close();
      await connection.close();
    },
  };
}

/** A database the bridge runs against: its pool, and its URL for the signaller's lock connection. */
export interface Database {
  readonly pool: DatabasePool;
  readonly url: string;
}

/** A standby takes the lock within a fifth of a second of its holder letting go. */
export const quickSignaller = { lock: { retryMs: 200 } } as const;

/** Rows of the signal outbox: batches of signals still owed. */
export async function owedRows(pool: DatabasePool): Promise<number> {
  return pool.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int4 AS n FROM push_signal_outbox`);
}

export function messageEvent(channelId: string, authorId: string, id: string, createdAt = new Date()): MessageEventBody {
  return { id, channel_id: channelId, author_id: authorId, created_at: createdAt.toISOString() };
}

const pendingRow = z.object({
  registration_id: z.string(),
  channel_id: z.string(),
  message_count: z.number(),
  first_message_id: z.string(),
  first_at: z.date(),
  last_message_id: z.string(),
  is_dm: z.boolean(),
});
export type PendingRow = z.infer<typeof pendingRow>;

export async function pendingRows(pool: DatabasePool, channelId?: string): Promise<readonly PendingRow[]> {
  return pool.any(sql.type(pendingRow)`
    SELECT registration_id, channel_id, message_count, first_message_id, first_at, last_message_id, is_dm
    FROM push_pending
    WHERE ${channelId === undefined ? sql.fragment`TRUE` : sql.fragment`channel_id = ${channelId}`}
    ORDER BY registration_id, channel_id`);
}

/** How many `pending` signals the device's workflow received; undefined if it does not exist. */
export async function pendingSignals(client: Client, device: { userId: string; deviceId: string }): Promise<number | undefined> {
  const handle = client.workflow.getHandle(registrationWorkflowId(device.userId, device.deviceId));
  try {
    await handle.describe();
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return undefined;
    throw error;
  }
  const history = await handle.fetchHistory();
  return (history.events ?? []).filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'pending').length;
}

/** Everything in the device's workflow history, payloads decoded to text: for "never contains a token". */
export async function historyText(client: Client, device: { userId: string; deviceId: string }): Promise<string> {
  const history = await client.workflow.getHandle(registrationWorkflowId(device.userId, device.deviceId)).fetchHistory();
  return JSON.stringify(history, (_key, value: unknown) => (value instanceof Uint8Array ? Buffer.from(value).toString('utf8') : value));
}

export async function outcomeCount(outcome: EventOutcome): Promise<number> {
  const metric = await bridgeMetrics.events.get();
  return metric.values.find((v) => v.labels.outcome === outcome)?.value ?? 0;
}

export async function until<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 30_000): Promise<T> {
  return waitFor(what, probe, timeoutMs);
}

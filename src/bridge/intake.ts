/**
 * The JetStream side of the bridge: a stream over `channel.*.MESSAGE_CREATE` (file storage,
 * bounded age) and one durable pull consumer shared by every bridge replica, so each event
 * goes to one replica at a time and events published while every bridge is down wait.
 *
 * Where the consumer starts: one that exists resumes where it was (nothing is lost across
 * restarts); one created now starts at the messages published from now on, or at `startAt`.
 * So a first start on a host stream that already holds days of messages wakes nobody for them.
 */
import { millis, nanos, type NatsConnection } from '@nats-io/transport-node';
import {
  AckPolicy,
  DeliverPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
  type ConsumerConfig,
  type ConsumerUpdateConfig,
  type JetStreamManager,
} from '@nats-io/jetstream';

export const defaultStreamName = 'ZIPPCHAT_MESSAGE_CREATE';
export const defaultConsumerName = 'zippchat-push-bridge';

/**
 * Events older than this are dropped by the stream: a bridge down longer loses them. It also
 * bounds how long an event can be redelivered, hence the ledger's retention (docs/bridge.md).
 */
export const streamMaxAgeMs = 3 * 24 * 3_600_000;

export interface IntakeOptions {
  /**
   * Prepended to `channel.*.MESSAGE_CREATE`: '' in production. Tests sharing one NATS server
   * give each file its own prefix so that no file consumes another's events.
   */
  readonly subjectPrefix?: string;
  /** Name of the stream to create when no stream captures the subjects yet. */
  readonly stream?: string;
  readonly consumer?: string;
  /** Unacknowledged this long, an event is redelivered (a live handler extends it). */
  readonly ackWaitMs?: number;
  /** Events delivered and unacknowledged across all replicas at once. */
  readonly maxAckPending?: number;
  /**
   * Where a consumer created now starts: at the messages the stream stored at or after this
   * time. Unset: at the messages published from now on. An existing consumer ignores it.
   */
  readonly startAt?: Date;
}

/** Where the consumer started: it existed and resumes, or was created now at new messages or at a time. */
export type ConsumerStart = { readonly kind: 'resumed' } | { readonly kind: 'new-messages' } | { readonly kind: 'start-time'; readonly at: Date };

export interface Intake {
  readonly stream: string;
  readonly consumer: string;
  readonly subjectPrefix: string;
  readonly ackWaitMs: number;
  readonly start: ConsumerStart;
  /** The stream's `max_age`; 0 when it keeps messages regardless of age. */
  readonly streamMaxAgeMs: number;
}

export function messageCreateSubjects(subjectPrefix = ''): string {
  return `${subjectPrefix}channel.*.MESSAGE_CREATE`;
}

/** Creates the stream and the consumer if missing, and brings the consumer's settings up to date. Idempotent. */
export async function ensureIntake(nc: NatsConnection, options: IntakeOptions = {}): Promise<Intake> {
  const subjectPrefix = options.subjectPrefix ?? '';
  const consumer = options.consumer ?? defaultConsumerName;
  const ackWaitMs = options.ackWaitMs ?? 30_000;
  const jsm = await jetstreamManager(nc);
  const stream = await ensureStream(jsm, subjectPrefix, options.stream ?? defaultStreamName);
  const settings: ConsumerUpdateConfig = {
    ack_wait: nanos(ackWaitMs),
    max_ack_pending: options.maxAckPending ?? 1_000,
    max_deliver: -1, // a failing event is retried (with growing delays) until it succeeds; a malformed one is terminated
    filter_subject: messageCreateSubjects(subjectPrefix),
  };
  let start: ConsumerStart;
  if (!(await consumerExists(jsm, stream, consumer))) {
    start = options.startAt === undefined ? { kind: 'new-messages' } : { kind: 'start-time', at: options.startAt };
    const position: Partial<ConsumerConfig> =
      start.kind === 'start-time'
        ? { deliver_policy: DeliverPolicy.StartTime, opt_start_time: start.at.toISOString() }
        : { deliver_policy: DeliverPolicy.New };
    // Two replicas starting at once both add: JetStream accepts an identical configuration twice.
    await jsm.consumers.add(stream, { durable_name: consumer, ack_policy: AckPolicy.Explicit, ...position, ...settings });
  } else {
    start = { kind: 'resumed' };
    await jsm.consumers.update(stream, consumer, settings); // never the position: it resumes where it was
  }
  const { config } = await jsm.streams.info(stream);
  return { stream, consumer, subjectPrefix, ackWaitMs, start, streamMaxAgeMs: millis(config.max_age) };
}

/** Only "not found" means missing: any other failure must not lead to creating it anew. */
async function consumerExists(jsm: JetStreamManager, stream: string, consumer: string): Promise<boolean> {
  try {
    await jsm.consumers.info(stream, consumer);
    return true;
  } catch (error) {
    if (error instanceof JetStreamApiError && error.code === JetStreamApiCodes.ConsumerNotFound) return false;
    throw error;
  }
}

async function ensureStream(jsm: JetStreamManager, subjectPrefix: string, name: string): Promise<string> {
  // The host may already capture these subjects in a stream of its own; reuse it then,
  // since JetStream refuses two streams over overlapping subjects.
  const existing = await jsm.streams.find(`${subjectPrefix}channel.1.MESSAGE_CREATE`).catch(() => undefined);
  if (existing !== undefined) return existing;
  await jsm.streams.add({
    name,
    subjects: [messageCreateSubjects(subjectPrefix)],
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    max_age: nanos(streamMaxAgeMs),
    // The host may set Nats-Msg-Id; a republish within this window is then stored once.
    duplicate_window: nanos(120_000),
  });
  return name;
}

/**
 * The JetStream side of the bridge: a stream over `channel.*.MESSAGE_CREATE` (file storage,
 * bounded age) and one durable pull consumer shared by every bridge replica, so each event
 * goes to one replica at a time and events published while every bridge is down wait.
 */
import { nanos, type NatsConnection } from '@nats-io/transport-node';
import { AckPolicy, DeliverPolicy, jetstreamManager, RetentionPolicy, StorageType, type ConsumerUpdateConfig } from '@nats-io/jetstream';

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
}

export interface Intake {
  readonly stream: string;
  readonly consumer: string;
  readonly subjectPrefix: string;
  readonly ackWaitMs: number;
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
  const stream = await ensureStream(nc, subjectPrefix, options.stream ?? defaultStreamName);
  const settings: ConsumerUpdateConfig = {
    ack_wait: nanos(ackWaitMs),
    max_ack_pending: options.maxAckPending ?? 1_000,
    max_deliver: -1, // a failing event is retried (with growing delays) until it succeeds; a malformed one is terminated
    filter_subject: messageCreateSubjects(subjectPrefix),
  };
  const existing = await jsm.consumers.info(stream, consumer).catch(() => undefined);
  if (existing === undefined) {
    // Two replicas starting at once both add: JetStream accepts an identical configuration twice.
    await jsm.consumers.add(stream, { durable_name: consumer, ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.All, ...settings });
  } else {
    await jsm.consumers.update(stream, consumer, settings);
  }
  return { stream, consumer, subjectPrefix, ackWaitMs };
}

async function ensureStream(nc: NatsConnection, subjectPrefix: string, name: string): Promise<string> {
  const jsm = await jetstreamManager(nc);
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

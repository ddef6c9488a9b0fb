/**
 * The JetStream side of the bridge: a stream over `channel.*.MESSAGE_CREATE` and one durable
 * pull consumer shared by every bridge replica (each event goes to one of them).
 */
import { AckPolicy, DeliverPolicy, nanos, RetentionPolicy, StorageType, type NatsConnection } from 'nats';

export const messageCreateSubject = 'channel.*.MESSAGE_CREATE';
export const defaultStreamName = 'ZIPPCHAT_MESSAGE_CREATE';
export const consumerName = 'zippchat-push-bridge';

/** Events older than this are dropped by the stream: a bridge down longer loses them. */
export const streamMaxAgeMs = 3 * 24 * 3_600_000;

export interface Intake {
  readonly stream: string;
  readonly consumer: string;
}

export async function ensureIntake(nc: NatsConnection): Promise<Intake> {
  const jsm = await nc.jetstreamManager();
  // The host may already capture these subjects in a stream of its own; reuse it then,
  // since JetStream refuses two streams over overlapping subjects.
  const existing = await jsm.streams.find('channel.1.MESSAGE_CREATE').catch(() => undefined);
  const stream = existing ?? defaultStreamName;
  if (existing === undefined) {
    await jsm.streams.add({
      name: stream,
      subjects: [messageCreateSubject],
      storage: StorageType.File,
      retention: RetentionPolicy.Limits,
      max_age: nanos(streamMaxAgeMs),
      duplicate_window: nanos(120_000),
    });
  }
  await jsm.consumers.add(stream, {
    durable_name: consumerName,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    filter_subject: messageCreateSubject,
    ack_wait: nanos(30_000),
    max_ack_pending: 1_000,
  });
  return { stream, consumer: consumerName };
}

/**
 * The demo's messages. Each is published as the host publishes it — a JetStream message on
 * `channel.<id>.MESSAGE_CREATE` with `{id, channel_id, author_id, created_at}` (docs/design.md, Message events),
 * nothing else. Its text goes only into `PlaintextStore`, a stand-in for what a phone would
 * fetch through the host's REST API and decrypt with its own keys: the push service never
 * holds plaintext, here as in production.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import type { PlainMessage } from '../notification.js';

export interface StoredMessage extends PlainMessage {
  readonly channelId: string;
}

export class PlaintextStore {
  private readonly messages: StoredMessage[] = [];

  add(message: StoredMessage): void {
    this.messages.push(message);
  }

  /** What a phone fetches for a drained channel: ids from `first` to `last`, oldest first. */
  range(channelId: string, first: string, last: string): StoredMessage[] {
    const [lo, hi] = [BigInt(first), BigInt(last)];
    return this.messages.filter((m) => m.channelId === channelId && BigInt(m.id) >= lo && BigInt(m.id) <= hi);
  }
}

export interface MessagePublisher {
  /** Publishes the event (JetStream acknowledges it) and keeps the text for the phones. */
  post(channelId: string, authorId: string, text: string): Promise<StoredMessage>;
}

export function messagePublisher(nc: NatsConnection, store: PlaintextStore, nextId: () => string, subjectPrefix = ''): MessagePublisher {
  const js = jetstream(nc);
  return {
    async post(channelId, authorId, text) {
      const message: StoredMessage = { id: nextId(), channelId, authorId, text };
      store.add(message);
      const event = { id: message.id, channel_id: channelId, author_id: authorId, created_at: new Date().toISOString() };
      // Nats-Msg-Id as a host would set it: a retried publish is stored once.
      await js.publish(`${subjectPrefix}channel.${channelId}.MESSAGE_CREATE`, JSON.stringify(event), { msgID: `message-${message.id}` });
      return message;
    },
  };
}

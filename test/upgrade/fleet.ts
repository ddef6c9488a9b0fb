/**
 * The phones of the upgrade tier and what they see: each registers through the api as the app
 * does, receives its wakes (UnifiedPush through a loopback distributor, FCM through a fake FCM),
 * drains each wake it is told to (`autoDrain`) — retrying across the api replicas while they
 * roll — and counts what the drains return. Also the chat server's side (MESSAGE_CREATE events
 * on JetStream) and a watcher that keeps calling GET and PUT /api/push/registration throughout,
 * counting any 5xx.
 */
import { jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { FakeFcm } from '../../devstack/stand-ins/fcm.js';
import { sleep } from '../../devstack/daemons.js';
import { createDeviceKeys, type DeviceKeys, type FakeDistributor } from '../../simulator/distributor.js';
import type { DrainItem } from '../../simulator/api-client.js';
import type { TransportName } from '../../domain/vocabulary.js';
import { nextId } from '../support/host-fixtures.js';
import { signDeviceToken, testJwtSecret } from '../support/jwt.js';

export interface Wake {
  readonly at: number;
  readonly priority: 'high' | 'normal';
  /** What the provider answered (2xx: delivered). */
  readonly status: number | undefined;
}

export interface Phone {
  readonly name: string;
  readonly userId: string;
  readonly deviceId: string;
  readonly jwt: string;
  readonly transport: TransportName;
  /** The UnifiedPush endpoint or the FCM registration token. */
  readonly token: string;
  readonly keys: DeviceKeys | undefined;
  /** Every request its provider received for it, in order. */
  readonly wakes: Wake[];
  /** Messages per channel, as its drains returned them. */
  readonly received: Map<string, number>;
  /** Drain each delivered wake (the app's behaviour); false leaves wakes outstanding. */
  autoDrain: boolean;
  /** The drains in progress, one after another. */
  draining: Promise<void>;
}

export const delivered = (wake: Wake) => wake.status !== undefined && wake.status >= 200 && wake.status < 300;

export class Fleet {
  readonly phones: Phone[] = [];
  private fcmSeen = 0;
  private readonly fcmWatch: ReturnType<typeof setInterval>;

  constructor(
    private readonly apiUrls: () => readonly string[],
    distributors: readonly FakeDistributor[],
    private readonly fcm: FakeFcm,
  ) {
    for (const distributor of distributors) {
      distributor.onMessage((m) => {
        const phone = this.phones.find((p) => p.transport === 'unifiedpush' && p.token === m.endpoint);
        if (phone !== undefined) this.woken(phone, { at: m.at.getTime(), priority: m.urgency === 'high' ? 'high' : 'normal', status: m.answered });
      });
    }
    this.fcmWatch = setInterval(() => this.collectFcm(), 50);
  }

  /** A phone of `userId`, registered through the api (the device needs a live session on the host). */
  async register(
    name: string,
    userId: string,
    deviceId: string,
    options: { transport: 'unifiedpush'; distributor: FakeDistributor } | { transport: 'fcm' },
  ): Promise<Phone> {
    const keys = options.transport === 'unifiedpush' ? createDeviceKeys() : undefined;
    const token = options.transport === 'unifiedpush' ? options.distributor.register(keys) : `fcm-${deviceId}:APA91b${'u'.repeat(120)}`;
    const jwt = await signDeviceToken({ userId, deviceId, secret: testJwtSecret, expiresIn: '2h' });
    const phone: Phone = {
      name,
      userId,
      deviceId,
      jwt,
      transport: options.transport,
      token,
      keys,
      wakes: [],
      received: new Map(),
      autoDrain: true,
      draining: Promise.resolve(),
    };
    this.phones.push(phone);
    const status = await this.put(phone);
    if (status !== 200) throw new Error(`PUT /api/push/registration for ${name} answered ${status}`);
    return phone;
  }

  /** `PUT /api/push/registration` with the phone's token, as the app does at every start. */
  async put(phone: Phone): Promise<number> {
    const body =
      phone.keys === undefined
        ? { transport: phone.transport, token: phone.token }
        : {
            transport: 'unifiedpush',
            token: phone.token,
            p256dh: phone.keys.p256dh.toString('base64url'),
            auth: phone.keys.auth.toString('base64url'),
          };
    return (await this.call(phone, 'PUT', '/api/push/registration', body)).status;
  }

  /** `DELETE /api/push/registration`. */
  async unregister(phone: Phone): Promise<number> {
    return (await this.call(phone, 'DELETE', '/api/push/registration')).status;
  }

  /** Drains now (after any drain in progress); resolves once a drain answered 200. */
  drain(phone: Phone): Promise<void> {
    phone.draining = phone.draining.then(async () => {
      for (;;) {
        const answer = await this.call(phone, 'POST', '/api/push/drain').catch(() => undefined);
        if (answer?.status === 200) {
          for (const item of answer.json as DrainItem[])
            phone.received.set(item.channel_id, (phone.received.get(item.channel_id) ?? 0) + item.message_count);
          return;
        }
        await sleep(200);
      }
    });
    return phone.draining;
  }

  /** One call to the first api replica that takes the connection (they roll one at a time). */
  async call(phone: Phone, method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
    let lastError: unknown;
    for (const url of this.apiUrls()) {
      try {
        const response = await fetch(`${url}${path}`, {
          method,
          headers: { authorization: `Bearer ${phone.jwt}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
          signal: AbortSignal.timeout(10_000),
        });
        const text = await response.text();
        return { status: response.status, json: text === '' ? undefined : (JSON.parse(text) as unknown) };
      } catch (error) {
        lastError = error; // refused: that replica is restarting; the next one serves
      }
    }
    throw lastError instanceof Error ? lastError : new Error(String(lastError));
  }

  close(): void {
    clearInterval(this.fcmWatch);
  }

  private woken(phone: Phone, wake: Wake): void {
    phone.wakes.push(wake);
    if (delivered(wake) && phone.autoDrain) void this.drain(phone);
  }

  private collectFcm(): void {
    const received = this.fcm.received;
    for (; this.fcmSeen < received.length; this.fcmSeen++) {
      const record = received[this.fcmSeen]!;
      const phone = this.phones.find((p) => p.transport === 'fcm' && p.token === record.token);
      if (phone !== undefined)
        this.woken(phone, { at: record.at.getTime(), priority: record.priority === 'HIGH' ? 'high' : 'normal', status: record.answered });
    }
  }
}

/** What the chat server publishes for a new message, and what every phone of the channel but the author's should drain. */
export class ChatServer {
  /** Messages published per channel. */
  readonly published = new Map<string, number>();

  constructor(private readonly nc: NatsConnection) {}

  async message(channelId: string, authorId: string): Promise<void> {
    const id = nextId();
    const body = JSON.stringify({ id, channel_id: channelId, author_id: authorId, created_at: new Date().toISOString() });
    // As the chat server does: republished with its id until JetStream acknowledges it.
    for (let attempt = 0; ; attempt++) {
      try {
        await jetstream(this.nc).publish(`channel.${channelId}.MESSAGE_CREATE`, body, { msgID: id });
        break;
      } catch (error) {
        if (attempt >= 50) throw error;
        await sleep(200);
      }
    }
    this.published.set(channelId, (this.published.get(channelId) ?? 0) + 1);
  }
}

export interface ApiWatchReport {
  readonly requests: number;
  /** `METHOD path → status` of every 5xx. */
  readonly serverErrors: readonly string[];
  /** Calls no replica took (every api down at once: never, when they roll one at a time). */
  readonly unanswered: number;
}

/**
 * Calls `GET /api/push/registration` for each phone in turn, and `PUT` for `churn` every few
 * calls, until stopped: what users' apps do all the time, upgrades or not.
 */
export function watchApi(fleet: Fleet, churn: Phone): { stop(): Promise<ApiWatchReport> } {
  let stopped = false;
  let requests = 0;
  let unanswered = 0;
  const serverErrors: string[] = [];
  const loop = (async () => {
    for (let turn = 0; !stopped; turn++) {
      const phones = fleet.phones;
      const phone = phones[turn % phones.length]!;
      const [method, status] =
        turn % 5 === 4
          ? ['PUT', await fleet.put(churn).catch(() => undefined)]
          : [
              'GET',
              await fleet.call(phone, 'GET', '/api/push/registration').then(
                (r) => r.status,
                () => undefined,
              ),
            ];
      requests++;
      if (status === undefined) unanswered++;
      else if (status >= 500) serverErrors.push(`${method} /api/push/registration → ${status}`);
      await sleep(100);
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      return { requests, serverErrors, unanswered };
    },
  };
}

/**
 * Simulated phones behind one fake UnifiedPush distributor (a real loopback RFC 8030 server
 * that decrypts every wake with the device's RFC 8291 key). Each phone behaves as the app
 * does: on every wake it drains (`POST /api/push/drain`), one drain per wake, in order, and
 * retries a drain that failed until one answers 200 — against the api replicas in turn, as a
 * load balancer would spread it. Everything is recorded for the verdict: when each wake
 * arrived, and each drain attempt with its outcome and what it returned.
 *
 * Drain requests go on a fresh connection each (no keep-alive), so an attempt refused at
 * connect is known not to have reached an api; an attempt that lost its connection after
 * sending may have committed: its answer is then lost ("no-answer").
 */
import { request } from 'node:http';
import type { DrainItem } from '../../simulator/api-client.js';
import { createDeviceKeys, startDistributor, type DeviceKeys, type FakeDistributor } from '../../simulator/distributor.js';
import { signDeviceToken, testJwtSecret } from '../support/jwt.js';

export type AttemptOutcome = 'ok' | 'refused' | 'status' | 'no-answer';

export interface DrainAttempt {
  readonly start: number;
  readonly end: number;
  readonly api: string;
  readonly outcome: AttemptOutcome;
  readonly status?: number;
  readonly items?: readonly DrainItem[];
}

export interface Phone {
  readonly userId: string;
  readonly deviceId: string;
  readonly jwt: string;
  readonly keys: DeviceKeys;
  readonly endpoint: string;
  /** Arrival time (ms) of every wake, in order. */
  readonly wakes: number[];
  /** The drain attempts made for each wake (same index as `wakes`). */
  readonly drains: DrainAttempt[][];
  /** Messages per channel, as drains returned them. */
  readonly received: Map<string, number>;
  /** No wake waiting and no drain in progress. */
  idle(): boolean;
}

export interface PhoneFleet {
  readonly distributor: FakeDistributor;
  readonly phones: readonly Phone[];
  /** Every phone idle. */
  idle(): boolean;
  /** Stops draining (after the current attempts) and closes the distributor. */
  close(): Promise<void>;
}

const retryPauseMs = 200;
const attemptTimeoutMs = 10_000;

export async function startPhones(devices: readonly { userId: string; deviceId: string }[], apiUrls: () => readonly string[]): Promise<PhoneFleet> {
  const distributor = await startDistributor();
  let closing = false;
  const byEndpoint = new Map<string, { phone: Phone; wake: () => void }>();
  const loops: Promise<void>[] = [];

  const phones = await Promise.all(
    devices.map(async ({ userId, deviceId }, index) => {
      const keys = createDeviceKeys();
      const endpoint = distributor.register(keys);
      const jwt = await signDeviceToken({ userId, deviceId, secret: testJwtSecret, expiresIn: '2h' });
      let queued = 0;
      let busy = false;
      let notify: (() => void) | undefined;
      const phone: Phone = {
        userId,
        deviceId,
        jwt,
        keys,
        endpoint,
        wakes: [],
        drains: [],
        received: new Map(),
        idle: () => queued === 0 && !busy,
      };
      const loop = async () => {
        let turn = index;
        for (;;) {
          while (queued === 0 && !closing) await new Promise<void>((resolve) => (notify = resolve));
          if (closing) return;
          busy = true;
          queued--;
          const attempts: DrainAttempt[] = [];
          phone.drains.push(attempts);
          for (;;) {
            const urls = apiUrls();
            const api = urls[turn++ % urls.length]!;
            const attempt = await drainOnce(api, jwt);
            attempts.push(attempt);
            if (attempt.outcome === 'ok') {
              for (const item of attempt.items ?? [])
                phone.received.set(item.channel_id, (phone.received.get(item.channel_id) ?? 0) + item.message_count);
              break;
            }
            if (attempt.status === 404 || attempt.status === 401 || closing) break; // a test failure, shown by the verdict
            await new Promise((resolve) => setTimeout(resolve, retryPauseMs));
          }
          busy = false;
        }
      };
      byEndpoint.set(endpoint, {
        phone,
        wake: () => {
          queued++;
          notify?.();
        },
      });
      loops.push(loop());
      return phone;
    }),
  );

  distributor.onMessage((message) => {
    const target = byEndpoint.get(message.endpoint);
    if (target === undefined) return;
    target.phone.wakes.push(message.at.getTime());
    target.wake();
  });

  return {
    distributor,
    phones,
    idle: () => phones.every((p) => p.idle()),
    async close() {
      closing = true;
      for (const { wake } of byEndpoint.values()) wake();
      await Promise.all(loops);
      await distributor.close();
    },
  };
}

function drainOnce(api: string, jwt: string): Promise<DrainAttempt> {
  const start = Date.now();
  return new Promise((resolve) => {
    let sent = false;
    const done = (outcome: AttemptOutcome, extra: Partial<DrainAttempt> = {}) => resolve({ start, end: Date.now(), api, outcome, ...extra });
    const req = request(
      `${api}/api/push/drain`,
      { method: 'POST', agent: false, headers: { authorization: `Bearer ${jwt}`, 'content-length': '0' }, timeout: attemptTimeoutMs },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', () => done('no-answer'));
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          if (status !== 200) return done('status', { status });
          try {
            done('ok', { status, items: JSON.parse(Buffer.concat(chunks).toString('utf8')) as DrainItem[] });
          } catch {
            done('no-answer');
          }
        });
      },
    );
    req.on('socket', (socket) => socket.once('connect', () => (sent = true)));
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (error: NodeJS.ErrnoException) => done(!sent && error.code === 'ECONNREFUSED' ? 'refused' : 'no-answer'));
    req.end();
  });
}

/**
 * Helper process: the floor of the fan-out — the same wakes posted straight from one process
 * through the production UnifiedPush transport (RFC 8291 encryption, guarded agent), with no
 * PostgreSQL and no Temporal in the way. The endpoints and keys arrive over IPC and are never
 * written anywhere.
 */
import { createLogger, createSenders, loadConfig, settleAll } from '../../src/testing.js';
import { serveParent } from './ipc.js';

export interface FloorRegistration {
  readonly id: string;
  readonly token: string;
  /** base64url */
  readonly p256dh: string;
  readonly auth: string;
}

export interface FloorRun {
  readonly startedAt: number;
  readonly finishedAt: number;
  readonly outcomes: Record<string, number>;
}

const config = loadConfig('worker', {
  DATABASE_URL: 'postgres://unused@127.0.0.1/unused',
  PUSH_UP_ALLOW_PRIVATE: 'true',
  PUSH_UP_ALLOW_HTTP: 'true',
});
const transports = createSenders(config, createLogger({ level: 'silent', name: 'floor' }));

serveParent({
  async send(params) {
    const { registrations, concurrency } = params as { registrations: FloorRegistration[]; concurrency: number };
    const outcomes: Record<string, number> = {};
    const startedAt = Date.now();
    await settleAll(registrations, concurrency, async (r) => {
      const registration = {
        id: r.id,
        userId: r.id, // UnifiedPush: nothing counts users
        transport: 'unifiedpush' as const,
        token: r.token,
        p256dh: Buffer.from(r.p256dh, 'base64url'),
        auth: Buffer.from(r.auth, 'base64url'),
      };
      const outcome = await transports.unifiedpush.send(registration, 'normal');
      outcomes[outcome.kind] = (outcomes[outcome.kind] ?? 0) + 1;
    });
    return { startedAt, finishedAt: Date.now(), outcomes } satisfies FloorRun;
  },
  async stop() {
    await transports.close();
  },
});

/**
 * The per-user limit holds across api replicas: two real api processes
 * (`dist/src/bin/api.js`) on one PostgreSQL, a runaway client spreading its requests over
 * both. In no one-second window are more than 50 + 2 × 3 of its requests admitted (the
 * stated tolerance: each replica's free admissions before it synchronises); every refusal is
 * a contract 429. Each process used to count alone, so two replicas admitted 100 a second.
 *
 * The server decides a request's window by its clock when the request arrives, somewhere
 * between our send and our receipt; a request is attributed to a window only when both lie in
 * it, so the check never depends on how fast the machine is.
 */
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { signDeviceToken, testJwtSecret } from '../../support/jwt.js';
import { freePort } from '../../../devstack/ports.js';
import { serviceEnv, startProcess, waitReady, type RunningProcess } from '../../support/processes.js';
import { createUser } from './host.js';

const limitPerSecond = 50;
const freePerReplica = 3;
const replicas = 2;

let db: TestDatabase;
const apis: { url: string; process: RunningProcess }[] = [];
const agent = new Agent({ connections: 32 });

beforeAll(async () => {
  db = await freshDatabase();
  for (let i = 0; i < replicas; i++) {
    const port = await freePort();
    const process = startProcess(
      'api',
      serviceEnv(db.url, { PORT: String(port), JWT_SECRET: testJwtSecret, TEMPORAL_TASK_QUEUE: `rate-limit-${port}` }),
    );
    apis.push({ url: `http://127.0.0.1:${port}`, process });
  }
  for (const api of apis) await waitReady(api.url, api.process);
});
afterAll(async () => {
  await agent.close();
  for (const api of apis) expect(await api.process.stop(), api.process.output()).toBe(0);
  await db?.drop();
});

interface Outcome {
  readonly replica: number;
  readonly sentAt: number;
  readonly receivedAt: number;
  readonly status: number;
  readonly retryAfter: string | undefined;
  readonly body: unknown;
}

describe('the per-user limit across two api processes', () => {
  it('admits at most 50 + 2 × 3 requests of a user in any one-second window, however they are spread', async () => {
    const token = await signDeviceToken({ userId: await createUser(db.pool), deviceId: 'phone', secret: testJwtSecret });
    const outcomes: Outcome[] = [];
    // A runaway client: 16 requests in flight on each replica, for at least two whole windows.
    const until = Date.now() + 2_500;
    let next = 0;
    const client = async () => {
      while (Date.now() < until) {
        const replica = next++ % replicas;
        const sentAt = Date.now();
        const response = await request(`${apis[replica]!.url}/api/push/config`, { headers: { authorization: `Bearer ${token}` }, dispatcher: agent });
        const body = await response.body.json();
        const retryAfter = response.headers['retry-after'];
        outcomes.push({
          replica,
          sentAt,
          receivedAt: Date.now(),
          status: response.statusCode,
          retryAfter: typeof retryAfter === 'string' ? retryAfter : undefined,
          body,
        });
      }
    };
    await Promise.all(Array.from({ length: 16 * replicas }, client));

    expect(new Set(outcomes.map((o) => o.status))).toEqual(new Set([200, 429]));
    for (const refused of outcomes.filter((o) => o.status === 429)) {
      expect(refused.body).toEqual({ error: 'rate_limited', message: expect.any(String) });
      expect(refused.retryAfter).toBe('1');
    }
    const admitted = outcomes.filter((o) => o.status === 200);
    const perWindow = new Map<number, number>();
    for (const o of admitted) {
      const window = Math.floor(o.sentAt / 1000);
      if (Math.floor(o.receivedAt / 1000) === window) perWindow.set(window, (perWindow.get(window) ?? 0) + 1);
    }
    const busiest = Math.max(...perWindow.values());
    expect(busiest, JSON.stringify(Object.fromEntries(perWindow))).toBeLessThanOrEqual(limitPerSecond + replicas * freePerReplica);
    // Both replicas served the user, and the limit did not starve it: at least a window's
    // worth, less what leases held unused by the other replica may cost (1.5 leases of 10).
    expect(new Set(admitted.map((o) => o.replica))).toEqual(new Set([0, 1]));
    expect(admitted.length).toBeGreaterThanOrEqual(limitPerSecond - (replicas - 1) * 15);
  });
});

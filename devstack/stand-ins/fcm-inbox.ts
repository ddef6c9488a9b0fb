/**
 * The phone side of the local FCM stand-in. A real phone gets its registration token from
 * Google Play services and its messages over Google's own connection; a simulated phone
 * asks the stand-in instead:
 *
 *   POST /_device/register {lower_high?} → {"token"}       mint a registration token; with
 *                                                          `lower_high`, FCM delivers the
 *                                                          token's HIGH messages as NORMAL
 *                                                          (as it does for an app whose HIGH
 *                                                          messages show no notification)
 *   POST /_device/wakes {token, after, wait_ms}            long poll: the messages FCM
 *                                     → {"wakes": [...]}   accepted for that token after
 *                                                          sequence number `after`
 *
 * The token travels in the body, never in a URL, so it stays out of access logs.
 */
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { z } from 'zod';
import { sendJson, type FakeRequest } from '../../simulator/loopback-server.js';

/** One message FCM accepted for a device, as the device receives it. */
export interface InboxWake {
  readonly seq: number;
  /** RFC 3339 time FCM accepted it. */
  readonly at: string;
  /** As delivered (`RemoteMessage.getPriority()`): NORMAL for a lowered HIGH message. */
  readonly priority: 'HIGH' | 'NORMAL';
  /** As sent (`RemoteMessage.getOriginalPriority()`). */
  readonly original_priority: 'HIGH' | 'NORMAL';
  readonly collapse_key: string;
  readonly ttl: string;
  readonly data: Readonly<Record<string, string>>;
  /** Bytes of the send request's body (constant for the wake). */
  readonly request_bytes: number;
}

export interface FcmInbox {
  /** Mints a registration token a device can register with (`lowerHigh`: its HIGH messages arrive as NORMAL). */
  mint(options?: { lowerHigh?: boolean }): string;
  isKnown(token: string): boolean;
  /** Records a message FCM accepted for `token`, sent with `priority`. */
  deliver(token: string, wake: Omit<InboxWake, 'seq' | 'at' | 'original_priority'>): void;
  /** Answers `/_device/*`; false when the path is not one of its own. */
  handle(request: FakeRequest, response: ServerResponse): boolean;
  /** Ends every waiting long poll (on close). */
  close(): void;
}

const registerSchema = z.object({ lower_high: z.boolean().default(false) });

const pollSchema = z.object({
  token: z.string().min(1).max(4096),
  after: z.number().int().min(0).default(0),
  wait_ms: z.number().int().min(0).max(30_000).default(25_000),
});

/** Wakes kept per token: a phone that never polls must not grow the stand-in forever. */
const keptPerToken = 100;

export function createFcmInbox(): FcmInbox {
  const wakes = new Map<string, InboxWake[]>();
  const lowering = new Set<string>();
  const waiters = new Map<string, Set<() => void>>();
  let seq = 0;
  const notify = (token: string) => {
    for (const wake of waiters.get(token) ?? []) wake();
    waiters.delete(token);
  };
  const poll = (token: string, after: number, waitMs: number, response: ServerResponse) => {
    const ready = () => (wakes.get(token) ?? []).filter((w) => w.seq > after);
    if (ready().length > 0 || waitMs === 0) return sendJson(response, 200, { wakes: ready() });
    const answer = () => {
      clearTimeout(timer);
      waiters.get(token)?.delete(answer);
      if (!response.writableEnded) sendJson(response, 200, { wakes: ready() });
    };
    const timer = setTimeout(answer, waitMs);
    waiters.set(token, (waiters.get(token) ?? new Set()).add(answer));
    response.once('close', () => waiters.get(token)?.delete(answer));
  };
  const mint = (options: { lowerHigh?: boolean } = {}) => {
    // The shape FCM's tokens have (the api refuses others): instance id, ':', 'APA91b…'.
    const token = `${randomBytes(16).toString('base64url')}:APA91b${randomBytes(96).toString('base64url')}`;
    wakes.set(token, []);
    if (options.lowerHigh === true) lowering.add(token);
    return token;
  };
  const route = (path: string, request: FakeRequest, response: ServerResponse) => {
    if (request.method !== 'POST') return sendJson(response, 405, { error: 'POST only' });
    if (path === '/_device/register') {
      const parsed = registerSchema.safeParse(request.body.length === 0 ? {} : parseJson(request.body));
      if (!parsed.success) return sendJson(response, 400, { error: 'expected {lower_high?}' });
      return sendJson(response, 200, { token: mint({ lowerHigh: parsed.data.lower_high }) });
    }
    if (path !== '/_device/wakes') return sendJson(response, 404, { error: 'not found' });
    const parsed = pollSchema.safeParse(parseJson(request.body));
    if (!parsed.success) return sendJson(response, 400, { error: 'expected {token, after?, wait_ms?}' });
    poll(parsed.data.token, parsed.data.after, parsed.data.wait_ms, response);
  };
  return {
    mint,
    isKnown: (token) => wakes.has(token),
    deliver(token, wake) {
      const list = wakes.get(token) ?? [];
      const priority = lowering.has(token) ? 'NORMAL' : wake.priority;
      list.push({ ...wake, priority, original_priority: wake.priority, seq: ++seq, at: new Date().toISOString() });
      wakes.set(token, list.slice(-keptPerToken));
      notify(token);
    },
    handle(request, response) {
      const path = new URL(request.path, 'http://x').pathname;
      if (!path.startsWith('/_device/')) return false;
      route(path, request, response);
      return true;
    },
    close() {
      for (const token of [...waiters.keys()]) notify(token);
    },
  };
}

function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}

/**
 * A phone with Google Play services, against the local FCM stand-in: it gets a registration
 * token from the stand-in (as a phone gets one from Play services) and long-polls the
 * stand-in for what FCM accepted for that token. Against the real FCM there is no such
 * inbox: only a real phone receives those.
 */
import { wakePayload } from '../src/transports/types.js';
import { WakeQueue } from './wake-queue.js';
import type { ReceivedWake, WakeSource } from './wake-source.js';
import type { InboxWake } from '../devstack/stand-ins/fcm-inbox.js';

/** `lowerHigh`: the stand-in delivers this phone's HIGH wakes as NORMAL, as FCM does for an app whose HIGH messages show no notification. */
export async function fcmSource(standInUrl: string, options: { lowerHigh?: boolean } = {}): Promise<WakeSource> {
  const base = standInUrl.replace(/\/+$/, '');
  const post = async (path: string, body: unknown, signal?: AbortSignal): Promise<unknown> => {
    const response = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal,
    });
    if (!response.ok) throw new Error(`FCM stand-in ${path} answered ${response.status}`);
    return response.json();
  };
  const { token } = (await post('/_device/register', { lower_high: options.lowerHigh === true })) as { token: string };
  const queue = new WakeQueue<ReceivedWake>();
  const stop = new AbortController();
  const polling = (async () => {
    let after = 0;
    while (!stop.signal.aborted) {
      try {
        const { wakes } = (await post('/_device/wakes', { token, after, wait_ms: 20_000 }, stop.signal)) as { wakes: InboxWake[] };
        for (const wake of wakes) {
          after = Math.max(after, wake.seq);
          queue.push(toWake(wake));
        }
      } catch {
        if (!stop.signal.aborted) await new Promise((resolve) => setTimeout(resolve, 1_000)); // stand-in restarting
      }
    }
  })();
  return {
    transport: 'fcm',
    registration: { transport: 'fcm', token },
    description: `FCM via the local FCM stand-in at ${new URL(base).origin}${options.lowerHigh === true ? ' (which delivers its HIGH wakes as NORMAL)' : ''}`,
    next: (timeoutMs, signal) => queue.next(timeoutMs, signal),
    async close() {
      stop.abort();
      await polling;
    },
  };
}

function toWake(wake: InboxWake): ReceivedWake {
  const payload = JSON.stringify(wake.data);
  const problems: string[] = [];
  if (payload !== wakePayload) problems.push(`data ${payload} is not the wake`);
  if (wake.collapse_key !== 'wake') problems.push(`collapse_key ${wake.collapse_key}, expected wake`);
  if (wake.ttl !== '3600s') problems.push(`ttl ${wake.ttl}, expected 3600s`);
  return {
    transport: 'fcm',
    at: new Date(wake.at),
    priority: wake.priority === 'HIGH' ? 'high' : 'normal',
    originalPriority: wake.original_priority === 'HIGH' ? 'high' : 'normal',
    encrypted: false,
    bytes: wake.request_bytes,
    payload,
    problems,
  };
}

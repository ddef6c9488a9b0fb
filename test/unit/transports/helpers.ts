/** Shared set-up of the transport tests: configuration, captured logs, registrations, polling. */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { loadConfig, type WorkerConfig } from '../../../src/config/index.js';
import type { Logger } from '../../../src/observability/log.js';
import type { RegistrationForSend } from '../../../src/transports/types.js';
import type { DeviceKeys } from '../../../simulator/distributor.js';

/** A worker configuration from these variables (plus a database URL nobody dials). */
export function workerConfig(env: Record<string, string> = {}): WorkerConfig {
  return loadConfig('worker', { DATABASE_URL: 'postgres://push@127.0.0.1:9/unused', ...env });
}

export interface CapturedLog {
  readonly log: Logger;
  /** Every line written so far, raw JSON text. */
  readonly lines: string[];
  messages(): string[];
}

/** A logger at trace level whose lines are kept in memory. */
export function captureLog(): CapturedLog {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(
        ...chunk
          .toString('utf8')
          .split('\n')
          .filter((line) => line !== ''),
      );
      done();
    },
  });
  const log = pino({ level: 'trace' }, sink);
  return { log, lines, messages: () => lines.map((line) => String((JSON.parse(line) as { msg?: unknown }).msg)) };
}

let nextId = 1;

export function fcmRegistration(token: string): RegistrationForSend {
  const id = String(nextId++);
  return { id, userId: `user-${id}`, transport: 'fcm', token, p256dh: null, auth: null };
}

export function upRegistration(endpoint: string, keys?: DeviceKeys): RegistrationForSend {
  const id = String(nextId++);
  return { id, userId: `user-${id}`, transport: 'unifiedpush', token: endpoint, p256dh: keys?.p256dh ?? null, auth: keys?.auth ?? null };
}

/** A token that looks like FCM's (they are ~150 url-safe characters). */
export function fakeFcmToken(): string {
  return `${Math.random().toString(36).slice(2, 13)}:APA91b${'x'.repeat(130)}${nextId++}`;
}

/** Polls `condition` until it holds, failing after `timeoutMs` (no fixed sleeps). */
export async function eventually(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Runs `task` for 0…count-1 with at most `parallel` in flight. */
export async function inBatches<T>(count: number, parallel: number, task: (index: number) => Promise<T>): Promise<T[]> {
  const results: T[] = [];
  for (let start = 0; start < count; start += parallel) {
    const batch = Array.from({ length: Math.min(parallel, count - start) }, (_, i) => task(start + i));
    results.push(...(await Promise.all(batch)));
  }
  return results;
}

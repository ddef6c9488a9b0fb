/**
 * Structured logs (pino, JSON lines on stdout). Every line a process writes is one of these —
 * the Temporal SDK's own lines too (src/worker/sdk-runtime.ts) — with the level as its
 * label (`"level":"info"`), which is what Cloud Logging, Loki and Elastic read. Push tokens,
 * endpoints and keys are secrets of the device: the redaction below removes them wherever a
 * log call passes them by these names, and `redactEndpoint` keeps only the host of an
 * endpoint URL for messages.
 */
import { pino, type Logger } from 'pino';

export type { Logger } from 'pino';

const secretPaths = [
  'token',
  'endpoint',
  'p256dh',
  'auth',
  'up_p256dh',
  'up_auth',
  'authorization',
  'privateKey',
  'credentials',
  '*.token',
  '*.endpoint',
  '*.p256dh',
  '*.auth',
  '*.up_p256dh',
  '*.up_auth',
  '*.authorization',
  '*.privateKey',
  'req.headers.authorization',
  'headers.authorization',
];

/** `destination`: where the lines go (stdout by default; tests capture them). */
export function createLogger(options: { level: string; name: string }, destination?: pino.DestinationStream): Logger {
  const settings: pino.LoggerOptions = {
    name: options.name,
    level: options.level,
    redact: { paths: secretPaths, censor: '[redacted]' },
    base: { service: options.name },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  };
  return destination === undefined ? pino(settings) : pino(settings, destination);
}

/** `https://ntfy.example/up/abc123?x` → `https://ntfy.example/…`: the path is the secret part. */
export function redactEndpoint(endpoint: string): string {
  try {
    const url = new URL(endpoint);
    return `${url.protocol}//${url.host}/…`;
  } catch {
    return '[invalid endpoint]';
  }
}

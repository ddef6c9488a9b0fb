/**
 * The service configuration: every variable of contract §3 (plus the few operational ones
 * documented in the README), validated once at start-up. This is the only module that reads
 * `process.env` for the services; everything else receives a `Config`.
 *
 * A bad value throws a `ConfigError` whose message is one line naming the variable; the entry
 * points print it and exit 1. Secret values are never echoed back.
 */
import { createECDH, createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import { z } from 'zod';
import { parseRfc3339 } from '../bridge/event.js';

export type Role = 'api' | 'worker' | 'bridge' | 'migrate' | 'admin' | 'all';

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    problem: string,
  ) {
    super(`config: ${variable} ${problem}`);
    this.name = 'ConfigError';
  }
}

export type JwtKey =
  | { kind: 'secret'; algorithm: 'HS256'; key: Uint8Array }
  | { kind: 'public'; algorithm: 'RS256' | 'ES256' | 'EdDSA'; key: KeyObject };

export interface FcmCredentials {
  readonly clientEmail: string;
  readonly privateKey: string;
  readonly privateKeyId: string | undefined;
  /** Where the OAuth token is fetched: the key file's `token_uri` (contract §3). */
  readonly tokenUri: string;
}

export interface Config {
  readonly databaseUrl: string;
  readonly natsServers: readonly string[];
  readonly temporal: {
    readonly address: string;
    readonly namespace: string;
    readonly taskQueue: string;
    /** The Temporal Web UI, for links printed by the operator tools; optional. */
    readonly uiUrl: string | undefined;
  };
  readonly http: { readonly host: string; readonly port: number };
  readonly workerMetricsPort: number;
  readonly bridgeMetricsPort: number;
  /** The Temporal SDK's own Prometheus endpoint on the worker (0: off). */
  readonly workerSdkMetricsPort: number;
  readonly logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  readonly jwt: {
    readonly key: JwtKey | undefined;
    readonly issuer: string | undefined;
    readonly audience: string | undefined;
  };
  readonly fcm: {
    /** Set on the api ⇒ `GET /api/push/config` reports `fcm: true`. */
    readonly projectId: string | undefined;
    /** Set on the worker ⇒ FCM wakes can be sent. */
    readonly credentials: FcmCredentials | undefined;
    readonly endpoint: string;
  };
  readonly unifiedPush: {
    readonly allowPrivate: boolean;
    readonly allowHttp: boolean;
    readonly vapid: { readonly privateKey: string; readonly publicKey: string; readonly subject: string } | undefined;
  };
  readonly coalescing: { readonly minIntervalMs: number; readonly rewakeAfterMs: number };
  /** Where the bridge's consumer starts when it is created: at this time, or (unset) at new messages. */
  readonly bridgeStartAt: Date | undefined;
  /**
   * The per-registration FCM wake budget (docs/transports.md): a burst of `burst` wakes, one
   * more every `refillMs`; a wake with no DM pending leaves `dmReserve` of it. `burst` 0: off.
   */
  readonly fcmBudget: FcmBudgetConfig;
}

export interface FcmBudgetConfig {
  readonly burst: number;
  readonly refillMs: number;
  readonly dmReserve: number;
}

type Env = Readonly<Record<string, string | undefined>>;

/** Reads and validates the configuration for one process role. Throws `ConfigError`. */
export function loadConfig(role: Role, env: Env = process.env): Config {
  const read = (name: string): string | undefined => {
    const value = env[name];
    return value === undefined || value.trim() === '' ? undefined : value;
  };
  const coalescing = {
    minIntervalMs: integer(read, 'PUSH_MIN_INTERVAL_MS', 15_000, 1, 86_400_000),
    rewakeAfterMs: integer(read, 'PUSH_REWAKE_AFTER_MS', 900_000, 1, 7 * 86_400_000),
  };
  if (coalescing.rewakeAfterMs < coalescing.minIntervalMs) {
    throw new ConfigError('PUSH_REWAKE_AFTER_MS', 'must not be shorter than PUSH_MIN_INTERVAL_MS');
  }
  const fcmBudget = readFcmBudget(read);
  const jwtKey = readJwtKey(read);
  if (jwtKey === undefined && (role === 'api' || role === 'all')) {
    throw new ConfigError('JWT_SECRET', 'is required (or JWT_PUBLIC_KEY): the api verifies device JWTs');
  }
  return {
    databaseUrl: databaseUrl(read),
    natsServers: natsServers(read),
    temporal: {
      address: hostPort(read, 'TEMPORAL_ADDRESS', '127.0.0.1:7233'),
      namespace: identifier(read, 'TEMPORAL_NAMESPACE', 'default'),
      taskQueue: identifier(read, 'TEMPORAL_TASK_QUEUE', 'push-wakes'),
      uiUrl: optionalHttpUrl(read, 'TEMPORAL_UI_URL'),
    },
    http: { host: hostName(read, 'HOST', '127.0.0.1'), port: integer(read, 'PORT', 8080, 0, 65_535) },
    workerMetricsPort: integer(read, 'WORKER_METRICS_PORT', 9464, 0, 65_535),
    bridgeMetricsPort: integer(read, 'BRIDGE_METRICS_PORT', 9465, 0, 65_535),
    workerSdkMetricsPort: integer(read, 'WORKER_SDK_METRICS_PORT', 9466, 0, 65_535),
    logLevel: oneOf(read, 'LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], 'info'),
    jwt: { key: jwtKey, issuer: read('JWT_ISSUER'), audience: read('JWT_AUDIENCE') },
    fcm: readFcm(read, role),
    unifiedPush: {
      allowPrivate: boolean(read, 'PUSH_UP_ALLOW_PRIVATE', false),
      allowHttp: boolean(read, 'PUSH_UP_ALLOW_HTTP', false),
      vapid: readVapid(read),
    },
    coalescing,
    bridgeStartAt: instant(read, 'BRIDGE_START_AT'),
    fcmBudget,
  };
}

function readFcmBudget(read: Read): FcmBudgetConfig {
  const burst = integer(read, 'PUSH_FCM_WAKE_BURST', 20, 0, 10_000);
  const refillMs = integer(read, 'PUSH_FCM_WAKE_REFILL_MS', 180_000, 1, 86_400_000);
  const dmReserve = integer(read, 'PUSH_FCM_DM_RESERVE', 5, 0, 10_000);
  // A reserve as large as the burst would never let a server-channel wake through FCM.
  if (burst > 0 && dmReserve >= burst) throw new ConfigError('PUSH_FCM_DM_RESERVE', `must be smaller than PUSH_FCM_WAKE_BURST (${burst})`);
  return { burst, refillMs, dmReserve };
}

type Read = (name: string) => string | undefined;

function databaseUrl(read: Read): string {
  const value = read('DATABASE_URL');
  if (value === undefined) throw new ConfigError('DATABASE_URL', 'is required (a postgres:// connection string)');
  const url = tryUrl(value);
  if (url === undefined || !['postgres:', 'postgresql:'].includes(url.protocol)) {
    throw new ConfigError('DATABASE_URL', 'must be a postgres:// or postgresql:// URL');
  }
  return value;
}

function natsServers(read: Read): string[] {
  const value = read('NATS_URL') ?? 'nats://127.0.0.1:4222';
  const servers = value.split(',').map((s) => s.trim()).filter((s) => s !== '');
  for (const server of servers) {
    const url = tryUrl(server);
    if (url === undefined || !['nats:', 'tls:', 'ws:', 'wss:'].includes(url.protocol) || url.hostname === '') {
      throw new ConfigError('NATS_URL', `must be comma-separated nats:// URLs (bad entry "${redactUserInfo(server)}")`);
    }
  }
  if (servers.length === 0) throw new ConfigError('NATS_URL', 'must name at least one server');
  return servers;
}

function hostPort(read: Read, name: string, fallback: string): string {
  const value = read(name) ?? fallback;
  const match = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(value);
  if (match === null || Number(match[2]) < 1 || Number(match[2]) > 65_535) {
    throw new ConfigError(name, `must be host:port (got "${value}")`);
  }
  return value;
}

function optionalHttpUrl(read: Read, name: string): string | undefined {
  const value = read(name);
  if (value === undefined) return undefined;
  const url = tryUrl(value);
  if (url === undefined || !['http:', 'https:'].includes(url.protocol)) throw new ConfigError(name, 'must be an http(s) URL');
  return value.replace(/\/+$/, '');
}

function hostName(read: Read, name: string, fallback: string): string {
  const value = read(name) ?? fallback;
  if (!/^[A-Za-z0-9.:-]+$/.test(value)) throw new ConfigError(name, `must be a host name or IP address (got "${value}")`);
  return value;
}

function identifier(read: Read, name: string, fallback: string): string {
  const value = read(name) ?? fallback;
  if (!/^[A-Za-z0-9._-]{1,255}$/.test(value)) {
    throw new ConfigError(name, `must be 1-255 characters of letters, digits, '.', '_' or '-' (got "${value}")`);
  }
  return value;
}

function integer(read: Read, name: string, fallback: number, min: number, max: number): number {
  const value = read(name);
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value.trim()) || Number(value) < min || Number(value) > max) {
    throw new ConfigError(name, `must be an integer from ${min} to ${max} (got "${value}")`);
  }
  return Number(value);
}

function instant(read: Read, name: string): Date | undefined {
  const value = read(name);
  if (value === undefined) return undefined;
  const date = parseRfc3339(value.trim());
  if (date === undefined) throw new ConfigError(name, `must be an RFC 3339 date-time with an offset, e.g. 2026-12-01T00:00:00Z (got "${value}")`);
  return date;
}

function boolean(read: Read, name: string, fallback: boolean): boolean {
  const value = read(name)?.trim().toLowerCase();
  if (value === undefined) return fallback;
  if (['true', '1', 'yes', 'on'].includes(value)) return true;
  if (['false', '0', 'no', 'off'].includes(value)) return false;
  throw new ConfigError(name, `must be true or false (got "${value}")`);
}

function oneOf<T extends string>(read: Read, name: string, allowed: readonly T[], fallback: T): T {
  const value = read(name) ?? fallback;
  if (!(allowed as readonly string[]).includes(value)) {
    throw new ConfigError(name, `must be one of ${allowed.join(', ')} (got "${value}")`);
  }
  return value as T;
}

function readJwtKey(read: Read): JwtKey | undefined {
  const secret = read('JWT_SECRET');
  const publicKey = read('JWT_PUBLIC_KEY');
  if (secret !== undefined && publicKey !== undefined) {
    throw new ConfigError('JWT_PUBLIC_KEY', 'must not be set together with JWT_SECRET (the key pins the algorithm)');
  }
  if (secret !== undefined) {
    // RFC 7518 §3.2: an HS256 key must be at least as long as the hash output.
    if (Buffer.byteLength(secret, 'utf8') < 32) throw new ConfigError('JWT_SECRET', 'must be at least 32 bytes');
    return { kind: 'secret', algorithm: 'HS256', key: new TextEncoder().encode(secret) };
  }
  if (publicKey === undefined) return undefined;
  let key: KeyObject;
  try {
    key = createPublicKey(publicKey.replace(/\\n/g, '\n'));
  } catch {
    throw new ConfigError('JWT_PUBLIC_KEY', 'is not a PEM public key');
  }
  const type = key.asymmetricKeyType;
  if (type === 'rsa') {
    if ((key.asymmetricKeyDetails?.modulusLength ?? 0) < 2048) throw new ConfigError('JWT_PUBLIC_KEY', 'RSA key must be at least 2048 bits');
    return { kind: 'public', algorithm: 'RS256', key };
  }
  if (type === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1') return { kind: 'public', algorithm: 'ES256', key };
  if (type === 'ed25519') return { kind: 'public', algorithm: 'EdDSA', key };
  throw new ConfigError('JWT_PUBLIC_KEY', 'must be an RSA, P-256 or Ed25519 public key (RS256, ES256 or EdDSA)');
}

const serviceAccountSchema = z.object({
  client_email: z.string().min(1),
  private_key: z.string().min(1),
  private_key_id: z.string().optional(),
  project_id: z.string().optional(),
  token_uri: z.string().url().optional(),
});

/**
 * FCM is configured whole or not at all (design §9). The api needs only FCM_PROJECT_ID (it
 * alone makes `GET /api/push/config` say `fcm: true`); a worker needs FCM_PROJECT_ID and
 * FCM_CREDENTIALS_JSON together, for the same project — a worker with one half would accept
 * registrations the api advertises and then fail every wake.
 */
function readFcm(read: Read, role: Role): Config['fcm'] {
  const endpoint = read('FCM_ENDPOINT') ?? 'https://fcm.googleapis.com';
  const endpointUrl = tryUrl(endpoint);
  if (endpointUrl === undefined || !['https:', 'http:'].includes(endpointUrl.protocol)) {
    throw new ConfigError('FCM_ENDPOINT', 'must be an http(s) URL');
  }
  const raw = read('FCM_CREDENTIALS_JSON');
  const projectId = read('FCM_PROJECT_ID');
  if (projectId !== undefined && !/^[a-z0-9-]{1,100}$/i.test(projectId)) {
    throw new ConfigError('FCM_PROJECT_ID', `is not a Firebase project id (got "${projectId}")`);
  }
  const sends = role === 'worker' || role === 'all';
  if (sends && projectId !== undefined && raw === undefined) {
    throw new ConfigError('FCM_CREDENTIALS_JSON', 'is required with FCM_PROJECT_ID on a worker (the service account that sends the wakes)');
  }
  if (raw === undefined) return { projectId, credentials: undefined, endpoint: endpoint.replace(/\/+$/, '') };
  let parsed: z.infer<typeof serviceAccountSchema>;
  try {
    parsed = serviceAccountSchema.parse(JSON.parse(raw));
  } catch {
    throw new ConfigError('FCM_CREDENTIALS_JSON', 'must be a service-account key JSON with client_email and private_key');
  }
  try {
    createPrivateKey(parsed.private_key);
  } catch {
    throw new ConfigError('FCM_CREDENTIALS_JSON', 'has a private_key that is not a PEM private key');
  }
  if (projectId === undefined) {
    if (sends) throw new ConfigError('FCM_PROJECT_ID', 'is required with FCM_CREDENTIALS_JSON (the api reports fcm: true only with it; set it on both)');
  } else if (parsed.project_id !== undefined && parsed.project_id !== projectId) {
    throw new ConfigError('FCM_PROJECT_ID', `is "${projectId}" but FCM_CREDENTIALS_JSON is a key of project "${parsed.project_id}"`);
  }
  return {
    projectId,
    credentials: {
      clientEmail: parsed.client_email,
      privateKey: parsed.private_key,
      privateKeyId: parsed.private_key_id,
      tokenUri: parsed.token_uri ?? 'https://oauth2.googleapis.com/token',
    },
    endpoint: endpoint.replace(/\/+$/, ''),
  };
}

function readVapid(read: Read): Config['unifiedPush']['vapid'] {
  const privateKey = read('PUSH_VAPID_PRIVATE_KEY');
  const subject = read('PUSH_VAPID_SUBJECT');
  if (privateKey === undefined && subject === undefined) return undefined;
  if (privateKey === undefined) throw new ConfigError('PUSH_VAPID_PRIVATE_KEY', 'is required with PUSH_VAPID_SUBJECT');
  if (subject === undefined) throw new ConfigError('PUSH_VAPID_SUBJECT', 'is required with PUSH_VAPID_PRIVATE_KEY');
  const subjectUrl = tryUrl(subject);
  if (subjectUrl === undefined || !['mailto:', 'https:'].includes(subjectUrl.protocol)) {
    throw new ConfigError('PUSH_VAPID_SUBJECT', 'must be a mailto: or https: URL (RFC 8292 §2.1)');
  }
  const publicKey = vapidPublicKey(privateKey);
  if (publicKey === undefined) throw new ConfigError('PUSH_VAPID_PRIVATE_KEY', 'must be a base64url P-256 private key (32 bytes)');
  return { privateKey, publicKey, subject };
}

/** Derives the uncompressed public point (base64url) of a raw P-256 private scalar. */
function vapidPublicKey(privateKey: string): string | undefined {
  if (!/^[A-Za-z0-9_-]+={0,2}$/.test(privateKey)) return undefined;
  const d = Buffer.from(privateKey, 'base64url');
  if (d.length !== 32) return undefined;
  try {
    // ECDH derives the public point and rejects a scalar outside [1, n-1].
    const ecdh = createECDH('prime256v1');
    ecdh.setPrivateKey(d);
    return ecdh.getPublicKey().toString('base64url');
  } catch {
    return undefined;
  }
}

function tryUrl(value: string): URL | undefined {
  try {
    return new URL(value);
  } catch {
    return undefined;
  }
}

function redactUserInfo(value: string): string {
  return value.replace(/\/\/[^@/]*@/, '//***@');
}

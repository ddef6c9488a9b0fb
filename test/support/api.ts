/**
 * The api app on a loopback ephemeral port, against a test database and the test Temporal
 * server, configured through the real config loader. Its logs are captured (unredacted, so a
 * test can prove no secret was ever handed to the logger). Beside it runs a signaller, as a
 * bridge replica would in production: it starts the workflows the api's registrations owe
 * (against the test Temporal server, whatever the api's own configuration says).
 *
 *   const api = await startTestApi({ db, taskQueue: 'my-file' });
 *   const response = await api.request('GET', '/api/push/config', { token });
 *   await api.close();
 */
import { request as httpRequest, Agent, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { Writable } from 'node:stream';
import type Koa from 'koa';
import { pino } from 'pino';
import { inject } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { apiSignals, createApp } from '../../src/api/app.js';
import { startSignaller } from '../../src/bridge/signaller.js';
import type { RateLimitOptions } from '../../src/api/rate-limit.js';
import type { LookupHost } from '../../src/api/unifiedpush-endpoint.js';
import { loadConfig, type ApiConfig } from '../../src/config/index.js';
import { createTemporalClient, type TemporalHandle } from '../../temporal/client.js';
import type { TestDatabase } from './database.js';
import { testJwtSecret } from './jwt.js';
import './provided.js';

export interface TestApiOptions {
  readonly db: TestDatabase;
  /** A task queue of this test file's own, so workers of other files never pick its workflows. */
  readonly taskQueue: string;
  /** Environment on top of DATABASE_URL, TEMPORAL_ADDRESS, TEMPORAL_TASK_QUEUE and JWT_SECRET. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly rateLimit?: RateLimitOptions;
  readonly lookupHost?: LookupHost;
  readonly temporalDeadlineMs?: number;
  /** The signaller beside the api: its pacing (0, the default: not paced), or false for none. */
  readonly signaller?: { readonly backlogMs: number } | false;
}

export interface TestResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly text: string;
  /** The body parsed as JSON (undefined when empty). */
  readonly json: unknown;
}

export interface RequestOptions {
  /** Sent as `Authorization: Bearer <token>`. */
  readonly token?: string;
  /** An object is sent as JSON (with its Content-Type unless `headers` says otherwise). */
  readonly body?: unknown;
  readonly headers?: Readonly<Record<string, string>>;
}

export interface TestApi {
  readonly url: string;
  readonly app: Koa;
  readonly config: ApiConfig;
  readonly temporal: TemporalHandle;
  /** Every log line the app wrote, as JSON text. */
  readonly logs: string[];
  request(method: string, path: string, options?: RequestOptions): Promise<TestResponse>;
  close(): Promise<void>;
}

export async function startTestApi(options: TestApiOptions): Promise<TestApi> {
  const config = loadConfig('api', {
    DATABASE_URL: options.db.url,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: options.taskQueue,
    JWT_SECRET: testJwtSecret,
    ...options.env,
  });
  const logs: string[] = [];
  const log = pino({ level: 'debug' }, new Writable({ write: (chunk: Buffer, _encoding, done) => void (logs.push(chunk.toString()), done()) }));
  const temporal = createTemporalClient(config.temporal);
  const signals = apiSignals({ config, temporal, log, ...pick(options) });
  const app = createApp({ config, pool: options.db.pool, temporal, log, signals, ...pick(options) });
  const signaller =
    options.signaller === false ? undefined : await startTestSignaller(options.db, options.taskQueue, options.signaller?.backlogMs ?? 0);
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  return {
    url: `http://127.0.0.1:${port}`,
    app,
    config,
    temporal,
    logs,
    request: (method, path, requestOptions = {}) => send(agent, port, method, path, requestOptions),
    async close() {
      agent.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await signaller?.stop();
      await temporal.close();
    },
  };
}

/**
 * A signaller on the test database, as a bridge replica runs one (no worker is needed: it only
 * sends); paced at `backlogMs` (0: not paced). Of several on one database, one sends at a time.
 */
export async function startTestSignaller(db: TestDatabase, taskQueue: string, backlogMs: number): Promise<{ stop(): Promise<void> }> {
  const connection = await Connection.connect({ address: inject('temporalAddress') });
  const signaller = startSignaller(
    { pool: db.pool, databaseUrl: db.url, temporal: new Client({ connection }), taskQueue, log: pino({ level: 'silent' }) },
    { backlogMs, lock: { retryMs: 200 } },
  );
  return {
    async stop() {
      await signaller.stop();
      await connection.close();
    },
  };
}

function pick(options: TestApiOptions) {
  return {
    ...(options.rateLimit === undefined ? {} : { rateLimit: options.rateLimit }),
    ...(options.lookupHost === undefined ? {} : { lookupHost: options.lookupHost }),
    ...(options.temporalDeadlineMs === undefined ? {} : { temporalDeadlineMs: options.temporalDeadlineMs }),
  };
}

/** Raw node:http, so tests can send what fetch refuses to (odd methods, lying headers, bytes). */
function send(agent: Agent, port: number, method: string, path: string, options: RequestOptions): Promise<TestResponse> {
  const headers: Record<string, string> = {};
  let body: Buffer | undefined;
  if (options.body !== undefined) {
    body = Buffer.isBuffer(options.body) ? options.body : Buffer.from(typeof options.body === 'string' ? options.body : JSON.stringify(options.body));
    if (!Buffer.isBuffer(options.body) && typeof options.body !== 'string') headers['content-type'] = 'application/json';
    headers['content-length'] = String(body.length);
  }
  if (options.token !== undefined) headers['authorization'] = `Bearer ${options.token}`;
  Object.assign(headers, options.headers);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json: text === '' ? undefined : parseJson(text) });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

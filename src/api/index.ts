/** Starts the api: pool, lazy Temporal client, Koa app on HOST:PORT. */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { once } from 'node:events';
import type { ApiConfig } from '../config/index.js';
import { openDatabase } from '../db/verify.js';
import { endedUnlessStopped } from '../process/lifecycle.js';
import { startTracing } from '../tracing/index.js';
import type { Logger } from '../observability/log.js';
import { createTemporalClient } from '../../temporal/client.js';
import { apiSignals, createApp } from './app.js';
import { defaultRateLimit, postgresRateLimitStore, SharedRateLimit } from './rate-limit.js';

export interface RunningApi {
  readonly url: string;
  /** Why the api cannot go on, should its listener close without `stop` (src/process/lifecycle.ts). */
  readonly ended: Promise<string>;
  stop(): Promise<void>;
}

export async function startApi(config: ApiConfig, log: Logger): Promise<RunningApi> {
  const tracing = startTracing(config.tracing, 'api', log);
  const pool = await openDatabase(config.databaseUrl, log);
  const temporal = createTemporalClient(config.temporal);
  const rateLimiter = new SharedRateLimit(postgresRateLimitStore(pool), defaultRateLimit);
  const signals = apiSignals({ config, temporal, log });
  const app = createApp({ config, pool, temporal, log, rateLimiter, signals });
  const server: Server = await new Promise((resolve, reject) => {
    const s = app.listen(config.http.port, config.http.host, () => resolve(s));
    s.once('error', reject);
  });
  // Slow clients must not hold sockets forever; keep-alive shorter than typical proxies'.
  server.requestTimeout = 15_000;
  server.headersTimeout = 10_000;
  server.keepAliveTimeout = 5_000;
  const { port } = server.address() as AddressInfo;
  const url = `http://${config.http.host.includes(':') ? `[${config.http.host}]` : config.http.host}:${port}`;
  log.info({ url }, 'api listening');
  // PostgreSQL and Temporal are not essential to staying alive: the api serves (and /readyz says
  // what is failing) while either is down. Its listener is: closed, it serves nothing.
  let stopping = false;
  const ended = endedUnlessStopped(once(server, 'close'), 'the HTTP listener', () => stopping);
  return {
    url,
    ended,
    async stop() {
      stopping = true;
      // Stop accepting, let in-flight requests finish, then close what they used.
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await rateLimiter.close();
      await temporal.close();
      await pool.end();
      await tracing?.shutdown();
      log.info('api stopped');
    },
  };
}

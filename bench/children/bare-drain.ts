/**
 * Helper process: the reference for the drain API — a bare Koa handler running the same SQL
 * (`drainPending`, src/api/drain.ts) on a pool built the same way, without authentication,
 * rate limit, Temporal signal, metrics or error mapping. The device comes in two headers.
 * With `rateLimit`, the same handler behind the api's shared per-user limit (its cost alone);
 * with `temporalEnv` as well, it also tells the device's workflow `drained` after answering,
 * as the api does (the cost of that signal alone).
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, Connection } from '@temporalio/client';
import Koa from 'koa';
import { announceDrained } from '../../temporal/registration-workflows.js';
import { benchTemporalConnection } from '../temporal-connection.js';
import { drainPending } from '../../src/api/drain.js';
import { defaultRateLimit, postgresRateLimitStore, SharedRateLimit } from '../../src/api/rate-limit.js';
import { createDatabasePool, type DatabasePool } from '../../src/db/pool.js';
import { serveParent } from './ipc.js';

let running: { server: Server; pool: DatabasePool; limit: SharedRateLimit | undefined; temporal: Connection | undefined } | undefined;

serveParent({
  async start(params) {
    const { databaseUrl, rateLimit, temporalEnv } = params as { databaseUrl: string; rateLimit?: boolean; temporalEnv?: Record<string, string> };
    const pool = await createDatabasePool(databaseUrl);
    const temporal = temporalEnv === undefined ? undefined : await Connection.connect(benchTemporalConnection(temporalEnv));
    const client = temporal === undefined ? undefined : new Client({ connection: temporal, namespace: temporalEnv?.TEMPORAL_NAMESPACE ?? 'default' });
    const app = new Koa();
    const limit = rateLimit === true ? new SharedRateLimit(postgresRateLimitStore(pool), defaultRateLimit) : undefined;
    if (limit !== undefined) {
      app.use(async (ctx, next) => {
        const taken = limit.take(ctx.get('x-user-id'));
        const decision = taken instanceof Promise ? await taken : taken;
        if (decision.allowed) return next();
        ctx.status = 429;
      });
    }
    app.use(async (ctx) => {
      const device = { userId: ctx.get('x-user-id'), deviceId: ctx.get('x-device-id') };
      const items = await drainPending(pool, device);
      if (items === null) ctx.status = 404;
      else ctx.body = items;
      // As the api: answer first, then tell the workflow (a failure is only counted there).
      if (client !== undefined && items !== null) void announceDrained(client, device).catch(() => undefined);
    });
    const server: Server = await new Promise((resolve, reject) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
      s.once('error', reject);
    });
    running = { server, pool, limit, temporal };
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  },
  async stop() {
    if (running === undefined) return;
    const { server, pool, limit, temporal } = running;
    running = undefined;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeIdleConnections();
    });
    await limit?.close();
    await temporal?.close();
    await pool.end();
  },
});

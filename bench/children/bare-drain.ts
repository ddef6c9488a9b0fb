/**
 * Helper process: the reference for the drain API — a bare Koa handler running the same SQL
 * (`drainPending`, src/api/drain.ts) on a pool built the same way, without authentication,
 * rate limit, metrics or error mapping. The device comes in two headers. With `rateLimit`,
 * the same handler behind the api's shared per-user limit (its cost alone).
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { createDatabasePool, type DatabasePool, defaultRateLimit, drainPending, postgresRateLimitStore, SharedRateLimit } from '../../src/testing.js';
import { serveParent } from './ipc.js';

let running: { server: Server; pool: DatabasePool; limit: SharedRateLimit | undefined } | undefined;

serveParent({
  async start(params) {
    const { databaseUrl, rateLimit } = params as { databaseUrl: string; rateLimit?: boolean };
    const pool = await createDatabasePool(databaseUrl);
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
      const drained = await drainPending(pool, device);
      if (drained === null) ctx.status = 404;
      else ctx.body = drained.items;
    });
    const server: Server = await new Promise((resolve, reject) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
      s.once('error', reject);
    });
    running = { server, pool, limit };
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  },
  async stop() {
    if (running === undefined) return;
    const { server, pool, limit } = running;
    running = undefined;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeIdleConnections();
    });
    await limit?.close();
    await pool.end();
  },
});

/**
 * Helper process: the reference for the drain API — a bare Koa handler running the same SQL
 * (`drainPending`, src/api/drain.ts) on a pool built the same way, without authentication,
 * rate limit, Temporal signal, metrics or error mapping. The device comes in two headers.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { drainPending } from '../../src/api/drain.js';
import { createDatabasePool, type DatabasePool } from '../../src/db/pool.js';
import { serveParent } from './ipc.js';

let running: { server: Server; pool: DatabasePool } | undefined;

serveParent({
  async start(params) {
    const { databaseUrl } = params as { databaseUrl: string };
    const pool = await createDatabasePool(databaseUrl);
    const app = new Koa();
    app.use(async (ctx) => {
      const items = await drainPending(pool, { userId: ctx.get('x-user-id'), deviceId: ctx.get('x-device-id') });
      if (items === null) ctx.status = 404;
      else ctx.body = items;
    });
    const server: Server = await new Promise((resolve, reject) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
      s.once('error', reject);
    });
    running = { server, pool };
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  },
  async stop() {
    if (running === undefined) return;
    const { server, pool } = running;
    running = undefined;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeIdleConnections();
    });
    await pool.end();
  },
});

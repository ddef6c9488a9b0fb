/**
 * The api as a Koa app, built from its dependencies so tests need no port.
 */
import Router from '@koa/router';
import Koa from 'koa';
import type { DatabasePool } from '../db/pool.js';
import { sql } from 'slonik';
import { checkReadiness } from '../health.js';
import type { Logger } from '../log.js';
import { registry } from '../metrics.js';
import type { TemporalHandle } from '../../temporal/client.js';
import type { Config } from '../config/index.js';
import { ApiError } from './errors.js';

export interface ApiDeps {
  readonly config: Config;
  readonly pool: DatabasePool;
  readonly temporal: TemporalHandle;
  readonly log: Logger;
}

export function createApp(deps: ApiDeps): Koa {
  const app = new Koa();
  app.proxy = false;
  app.use(errorMiddleware(deps.log));
  const router = new Router();
  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/readyz', async (ctx) => {
    const readiness = await checkReadiness({
      postgres: async () => void (await deps.pool.query(sql.unsafe`SELECT 1`)),
      temporal: () => deps.temporal.check(),
    });
    ctx.status = readiness.ready ? 200 : 503;
    ctx.body = { status: readiness.ready ? 'ready' : 'not_ready', checks: readiness.checks };
  });
  router.get('/metrics', async (ctx) => {
    ctx.type = registry.contentType;
    ctx.body = await registry.metrics();
  });
  app.use(router.routes());
  app.use(router.allowedMethods({ throw: true, methodNotAllowed: () => new ApiError('method_not_allowed', 'method not allowed on this path') }));
  app.use(() => {
    throw new ApiError('not_found', 'no such endpoint');
  });
  return app;
}

function errorMiddleware(log: Logger): Koa.Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (error) {
      if (error instanceof ApiError) {
        ctx.status = error.status;
        ctx.set(error.headers);
        ctx.body = { error: error.code, message: error.message };
        return;
      }
      log.error({ err: error, method: ctx.method, path: ctx.path }, 'unhandled error in request');
      ctx.status = 500;
      ctx.body = { error: 'internal', message: 'internal error' };
    }
  };
}

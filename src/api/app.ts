/**
 * The api as a Koa app, built from its dependencies so tests need no fixed port: the device
 * endpoints (docs/design.md, Device API and Authentication) behind authentication and the per-user rate limit,
 * plus the unauthenticated `/healthz`, `/readyz` and `/metrics`.
 */
import Router from '@koa/router';
import Koa from 'koa';
import type { DatabasePool } from '../db/pool.js';
import { checkDatabase } from '../db/check.js';
import { checkReadiness } from '../process/health.js';
import type { Logger } from '../observability/log.js';
import { registry } from '../observability/metrics.js';
import { serviceVersion } from '../process/version.js';
import type { TemporalHandle } from '../../temporal/client.js';
import type { ApiConfig } from '../config/index.js';
import { createBestEffortSignals, type RegistrationSignals } from './best-effort-signals.js';
import { authenticate, createBearerVerifier, type AuthenticatedState } from './auth.js';
import { errorSummary } from '../observability/error-summary.js';
import { ApiError, fromHttpError } from './errors.js';
import { requestDuration } from './metrics.js';
import { requestLog, routeOf } from './request-log.js';
import { defaultRateLimit, postgresRateLimitStore, rateLimitPerUser, SharedRateLimit, type RateLimitOptions } from './rate-limit.js';
import { keyRoutes } from './routes/keys.js';
import { pushRoutes } from './routes/push.js';
import { systemLookup, type LookupHost } from './unifiedpush-endpoint.js';

export interface ApiDeps {
  readonly config: ApiConfig;
  readonly pool: DatabasePool;
  readonly temporal: TemporalHandle;
  readonly log: Logger;
  /** Per-user request limit (default 50 requests/s), shared with other replicas through `pool`. */
  readonly rateLimit?: RateLimitOptions;
  /** The limit's state, when the caller closes it (startApi); else one is made here. */
  readonly rateLimiter?: SharedRateLimit;
  /** How UnifiedPush endpoint host names are resolved (the system resolver by default). */
  readonly lookupHost?: LookupHost;
  /** Deadline of each call to Temporal after a change committed. */
  readonly temporalDeadlineMs?: number;
  /** The signals to workflows (`apiSignals`). */
  readonly signals: RegistrationSignals;
}

export function createApp(deps: ApiDeps): Koa {
  const app = new Koa();
  app.proxy = false;
  // Errors are answered by errorMiddleware; what still reaches Koa (a client that hung up
  // mid-response) goes to the log rather than stderr.
  app.on('error', (error: unknown) => deps.log.debug({ err: errorSummary(error) }, 'request stream error'));
  app.use(requestLog(deps.log));
  app.use(measureLatency());
  app.use(errorMiddleware(deps.log));
  app.use(unanswered);
  const routers = [operationsRoutes(deps), ...deviceRoutes(deps)];
  for (const router of routers) app.use(router.routes());
  for (const router of routers) app.use(router.allowedMethods());
  return app;
}

/**
 * What no route answered becomes a contract error: a JSON 404, or a JSON 405 (with the
 * router's `Allow`) for a known path with another method — also for a method the router does
 * not implement at all, which it would answer 501, and no input may yield a 5xx.
 */
const unanswered: Koa.Middleware = async (ctx, next) => {
  await next();
  if (ctx.body != null) return;
  if (ctx.status === 404) throw new ApiError('not_found', 'no such endpoint');
  if (ctx.status === 405 || ctx.status === 501) {
    throw new ApiError('method_not_allowed', 'method not allowed on this path', { Allow: ctx.response.get('Allow') });
  }
};

function deviceRoutes(deps: ApiDeps): Router<AuthenticatedState>[] {
  const limiter = deps.rateLimiter ?? new SharedRateLimit(postgresRateLimitStore(deps.pool), deps.rateLimit ?? defaultRateLimit);
  const guard = [authenticate(createBearerVerifier(deps.config.jwt)), rateLimitPerUser(limiter), noStore];
  const routeDeps = {
    config: deps.config,
    pool: deps.pool,
    log: deps.log,
    signals: deps.signals,
    lookupHost: deps.lookupHost ?? systemLookup,
    guard,
  };
  return [pushRoutes(routeDeps), keyRoutes(routeDeps)];
}

/** The api's signals to workflows (`deleted`, a test wake's `pending`; a registration's start is owed in the outbox). */
export function apiSignals(deps: Pick<ApiDeps, 'config' | 'temporal' | 'log' | 'temporalDeadlineMs'>): RegistrationSignals {
  return createBestEffortSignals(
    deps.temporal,
    deps.config.temporal.taskQueue,
    deps.log,
    deps.temporalDeadlineMs === undefined ? {} : { deadlineMs: deps.temporalDeadlineMs },
  );
}

/** Per-device answers must not be kept by any cache between the app and us. */
const noStore: Koa.Middleware<AuthenticatedState> = async (ctx, next) => {
  ctx.set('Cache-Control', 'no-store');
  await next();
};

function operationsRoutes(deps: ApiDeps): Router {
  const router = new Router();
  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok', version: serviceVersion };
  });
  router.get('/readyz', async (ctx) => {
    const readiness = await checkReadiness({ postgres: () => checkDatabase(deps.pool), temporal: () => deps.temporal.check() }, undefined, deps.log);
    ctx.status = readiness.ready ? 200 : 503;
    ctx.body = { status: readiness.ready ? 'ready' : 'not_ready', checks: readiness.checks };
  });
  router.get('/metrics', async (ctx) => {
    ctx.type = registry.contentType;
    ctx.body = await registry.metrics();
  });
  return router;
}

/** Latency by route pattern (never the raw path: it may hold a device id), method and status. */
function measureLatency(): Koa.Middleware {
  return async (ctx, next) => {
    const end = requestDuration.startTimer();
    try {
      await next();
    } finally {
      end({ route: routeOf(ctx), method: ctx.method, status: String(ctx.status) });
    }
  };
}

function errorMiddleware(log: Logger): Koa.Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (error) {
      const apiError = error instanceof ApiError ? error : fromHttpError(error);
      if (apiError !== undefined) {
        ctx.status = apiError.status;
        ctx.set(apiError.headers);
        ctx.body = { error: apiError.code, message: apiError.message };
        return;
      }
      log.error({ err: errorSummary(error), reqId: ctx.state.requestId, method: ctx.method, route: routeOf(ctx) }, 'unhandled error in request');
      ctx.status = 500;
      ctx.body = { error: 'internal', message: 'internal error' };
    }
  };
}

/**
 * The api's access log and request ids. Every request gets an id: the caller's `X-Request-Id`
 * when it is a plausible one (1–128 characters of letters, digits and `._:+=/-`: a proxy's or
 * load balancer's id, never anything that could forge a log line or a header), else a new
 * UUID. The response carries it back in `X-Request-Id`, and one line per request logs it with
 * the method, the route's template (`/api/keys/devices/:device_id`, never the path: it holds
 * ids), the status and the duration. Probes and scrapes log at debug, everything else at info.
 */
import { randomUUID } from 'node:crypto';
import type Koa from 'koa';
import type { Logger } from '../observability/log.js';

export const requestIdHeader = 'X-Request-Id';

const acceptedRequestId = /^[A-Za-z0-9._:+=/-]{1,128}$/;

/** The caller's id when acceptable, else a new one. */
export function requestIdOf(given: string | undefined): string {
  return given !== undefined && acceptedRequestId.test(given) ? given : randomUUID();
}

/** The route template Koa's router matched, or `unmatched`. */
export function routeOf(ctx: Koa.Context): string {
  const route = (ctx as { _matchedRoute?: unknown })._matchedRoute;
  return typeof route === 'string' ? route : 'unmatched';
}

const quietRoutes = new Set(['/healthz', '/readyz', '/metrics']);

export function requestLog(log: Logger): Koa.Middleware {
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    const requestId = requestIdOf(ctx.get(requestIdHeader) || undefined);
    ctx.state.requestId = requestId;
    ctx.set(requestIdHeader, requestId);
    try {
      await next();
    } finally {
      const route = routeOf(ctx);
      const durationMs = Number(process.hrtime.bigint() - started) / 1e6;
      log[quietRoutes.has(route) ? 'debug' : 'info'](
        { reqId: requestId, method: ctx.method, route, status: ctx.status, durationMs: Math.round(durationMs * 10) / 10 },
        'request',
      );
    }
  };
}

/** The device endpoints (docs/design.md, Device API): `/api/push/config`, `/registration`, `/drain`, `/registration/test`. */
import Router from '@koa/router';
import type Koa from 'koa';
import type { AuthenticatedState } from '../auth.js';
import type { RouteDeps } from '../context.js';
import { drainPending } from '../drain.js';
import { observeDrain } from '../drain-receipt.js';
import { ApiError } from '../errors.js';
import { parseDrainRequest } from '../drain-request.js';
import { readJsonBody, readOptionalJsonBody } from '../json-body.js';
import { registrations } from '../metrics.js';
import { parseRegistrationRequest, type RegistrationRequest } from '../registration-request.js';
import { deleteRegistration, findRegistration, registrationJson, requestTestWake, upsertRegistration } from '../registration-store.js';
import { refusedHost } from '../unifiedpush-endpoint.js';

/** A valid PUT is under 3 KiB (a 2048-byte endpoint and two keys); this leaves room for JSON. */
export const maxRegistrationBodyBytes = 4_096;
/** The drain's optional report is a few dozen bytes; every body is held to the same limit. */
const maxDrainBodyBytes = 4_096;
/** At most one test wake per device this often, across api replicas (and `push-admin wake`'s count toward it). */
export const testWakeEveryMs = 60_000;
/** How long a UnifiedPush endpoint's host name may take to resolve. */
const lookupTimeoutMs = 2_000;

type Context = Koa.ParameterizedContext<AuthenticatedState>;

export function pushRoutes(deps: RouteDeps): Router<AuthenticatedState> {
  const router = new Router<AuthenticatedState>();
  router.get('/api/push/config', ...deps.guard, (ctx) => void (ctx.body = pushConfig(deps)));
  router.put('/api/push/registration', ...deps.guard, (ctx) => putRegistration(deps, ctx));
  router.get('/api/push/registration', ...deps.guard, (ctx) => getRegistration(deps, ctx));
  router.delete('/api/push/registration', ...deps.guard, (ctx) => removeRegistration(deps, ctx));
  router.post('/api/push/drain', ...deps.guard, (ctx) => drain(deps, ctx));
  router.post('/api/push/registration/test', ...deps.guard, (ctx) => testWake(deps, ctx));
  return router;
}

function pushConfig({ config }: RouteDeps): Record<string, unknown> {
  const vapid = config.unifiedPush.vapid;
  return { fcm: config.fcm.projectId !== undefined, unifiedpush: true, ...(vapid === undefined ? {} : { vapid_public_key: vapid.publicKey }) };
}

async function putRegistration(deps: RouteDeps, ctx: Context): Promise<void> {
  const device = ctx.state.device;
  let request: RegistrationRequest;
  try {
    request = await validRegistration(deps, ctx);
  } catch (error) {
    registrations.inc({ outcome: 'rejected' });
    throw error;
  }
  const result = await upsertRegistration(deps.pool, device, request);
  if (result === undefined) throw new ApiError('unauthorized', 'this device has no live session: sign in again', { 'WWW-Authenticate': 'Bearer' });
  registrations.inc({ outcome: result.outcome });
  // Its workflow's start was owed in the same transaction: the bridge's signaller sends it.
  deps.log.info({ userId: device.userId, deviceId: device.deviceId, transport: request.transport, outcome: result.outcome }, 'registration stored');
  ctx.body = registrationJson(result.view, deps.config.wakePolicy, Date.now());
}

async function validRegistration(deps: RouteDeps, ctx: Context): Promise<RegistrationRequest> {
  const { fcm, unifiedPush } = deps.config;
  const body = await readJsonBody(ctx, maxRegistrationBodyBytes);
  const request = parseRegistrationRequest(body, { fcmEnabled: fcm.projectId !== undefined, allowHttp: unifiedPush.allowHttp });
  if (request.transport === 'unifiedpush' && !unifiedPush.allowPrivate) {
    const reason = await refusedHost(request.endpoint, deps.lookupHost, lookupTimeoutMs);
    if (reason !== undefined) throw new ApiError('invalid_request', `token: ${reason}`);
  }
  return request;
}

async function getRegistration(deps: RouteDeps, ctx: Context): Promise<void> {
  const view = await findRegistration(deps.pool, ctx.state.device);
  if (view === null) throw new ApiError('not_found', 'this device has no push registration');
  ctx.body = registrationJson(view, deps.config.wakePolicy, Date.now());
}

async function removeRegistration(deps: RouteDeps, ctx: Context): Promise<void> {
  await deleteRegistration(deps.pool, ctx.state.device);
  // Told even when there was no row: a workflow left running by a lost signal ends too.
  await deps.signals.deleted(ctx.state.device);
  ctx.status = 204;
}

async function drain(deps: RouteDeps, ctx: Context): Promise<void> {
  const request = parseDrainRequest(await readOptionalJsonBody(ctx, maxDrainBodyBytes));
  const drained = await drainPending(deps.pool, ctx.state.device, request.wake);
  if (drained === null) throw new ApiError('not_found', 'this device has no push registration; register first');
  // Nothing is told to Temporal: the device's workflow learns of the drain from its next claim
  // (PostgreSQL is the truth), which a new message's signal or the re-wake brings anyway.
  ctx.body = drained.items;
  observeDrain(drained, request.wake);
}

/**
 * One test wake for the calling device (docs/design.md, Device API), under every rule but coalescing (the
 * wake policy). 202 with the `GET` shape at the moment of asking: a wake held back says why.
 */
async function testWake(deps: RouteDeps, ctx: Context): Promise<void> {
  const device = ctx.state.device;
  const request = await requestTestWake(deps.pool, device, testWakeEveryMs);
  if (request === null) throw new ApiError('not_found', 'this device has no push registration; register first');
  if (request.kind === 'too-soon') {
    const seconds = String(request.retryAfterSeconds);
    throw new ApiError('rate_limited', `one test wake a minute: try again in ${seconds} s`, { 'Retry-After': seconds });
  }
  await deps.signals.pending(device, request.view.transport);
  ctx.status = 202;
  ctx.body = registrationJson(request.view, deps.config.wakePolicy, Date.now());
}

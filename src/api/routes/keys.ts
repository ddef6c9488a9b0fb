/** Device revocation: `DELETE /api/keys/devices/{device_id}`, the caller's own devices only. */
import Router from '@koa/router';
import type { AuthenticatedState } from '../auth.js';
import type { RouteDeps } from '../context.js';
import { revokeDevice } from '../device-revocation.js';
import { ApiError } from '../errors.js';
import { isDeviceId } from '../identity.js';

export function keyRoutes(deps: RouteDeps): Router<AuthenticatedState> {
  const router = new Router<AuthenticatedState>();
  router.delete('/api/keys/devices/:device_id', ...deps.guard, async (ctx) => {
    const deviceId = ctx.params['device_id'];
    if (!isDeviceId(deviceId)) throw new ApiError('invalid_request', 'device_id: must be 1-128 characters without control characters');
    const device = { userId: ctx.state.device.userId, deviceId };
    if (!(await revokeDevice(deps.pool, device))) throw new ApiError('not_found', 'no such device');
    deps.log.info({ userId: device.userId, deviceId, by: ctx.state.device.deviceId }, 'device revoked');
    await deps.signals.deleted(device);
    ctx.status = 204;
  });
  return router;
}

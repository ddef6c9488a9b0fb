/**
 * Device authentication (docs/design.md, Authentication): `Authorization: Bearer <JWT>`, verified with the
 * configured key, whose type pins the one accepted algorithm (no `none`, no HS/RS confusion).
 * `exp` is required; `sub` must be a decimal user id and `device_id` a sane device id; `iss` and
 * `aud` are checked when configured. Anything else is a 401 — the reason is not told to the
 * caller beyond "expired" vs "invalid", which a client needs to decide whether to refresh.
 */
import { errors, jwtVerify, type JWTVerifyOptions } from 'jose';
import type Koa from 'koa';
import type { JwtSettings } from '../config/index.js';
import { ApiError } from './errors.js';
import { isDeviceId, isUserId } from './identity.js';
import type { DeviceIdentity } from '../../domain/vocabulary.js';

export type VerifyBearer = (authorization: string) => Promise<DeviceIdentity>;

/** A compact JWS: three base64url parts. Longer than this is not a token we issue. */
const bearerPattern = /^Bearer +([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*) *$/i;
const maxTokenLength = 8_192;

export function createBearerVerifier(jwt: JwtSettings): VerifyBearer {
  const { key } = jwt;
  if (key === undefined) throw new Error('the api needs a JWT key (JWT_SECRET or JWT_PUBLIC_KEY)');
  const options: JWTVerifyOptions = {
    algorithms: [key.algorithm],
    requiredClaims: ['exp', 'sub', 'device_id'],
    ...(jwt.issuer === undefined ? {} : { issuer: jwt.issuer }),
    ...(jwt.audience === undefined ? {} : { audience: jwt.audience }),
  };
  return async (authorization) => {
    const match = bearerPattern.exec(authorization);
    if (match === null || match[1]!.length > maxTokenLength) throw unauthorized('a Bearer token is required');
    let payload: Record<string, unknown>;
    try {
      ({ payload } = await jwtVerify(match[1]!, key.key, options));
    } catch (error) {
      throw unauthorized(error instanceof errors.JWTExpired ? 'the token has expired' : 'the token is not valid');
    }
    const { sub: userId, device_id: deviceId } = payload;
    if (!isUserId(userId) || !isDeviceId(deviceId)) throw unauthorized('the token is not valid');
    return { userId, deviceId };
  };
}

function unauthorized(message: string): ApiError {
  return new ApiError('unauthorized', message, { 'WWW-Authenticate': 'Bearer' });
}

export interface AuthenticatedState {
  device: DeviceIdentity;
}

/** Koa middleware: the caller's device in `ctx.state.device`, or a 401. */
export function authenticate(verify: VerifyBearer): Koa.Middleware<AuthenticatedState> {
  return async (ctx, next) => {
    ctx.state.device = await verify(ctx.get('authorization'));
    await next();
  };
}

/**
 * Device JWTs as a host chat server issues them (`sub`, `device_id`, `exp`),
 * signed with an HS256 secret. For development and testing an instance whose secret you
 * hold (the dev stack keeps its own in `.dev/jwt-secret`); production tokens come from the
 * host's login.
 */
import { SignJWT } from 'jose';

export async function signDeviceJwt(options: {
  readonly secret: string;
  readonly userId: string;
  readonly deviceId: string;
  readonly expiresIn?: string;
}): Promise<string> {
  return new SignJWT({ sub: options.userId, device_id: options.deviceId })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuedAt()
    .setExpirationTime(options.expiresIn ?? '12h')
    .sign(new TextEncoder().encode(options.secret));
}

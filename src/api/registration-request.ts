/**
 * The body of `PUT /api/push/registration` (design §7), validated into what gets stored.
 * Unknown fields are ignored — in particular `user_id` / `device_id`: the device is the token's.
 */
import { z } from 'zod';
import { decodeBase64Url } from './base64url.js';
import { ApiError } from './errors.js';
import { hasControlOrLoneSurrogate } from './identity.js';
import { isUncompressedP256Point } from './p256.js';
import { parseEndpoint } from './unifiedpush-endpoint.js';

export const maxFcmTokenBytes = 2048;

export type Transport = 'fcm' | 'unifiedpush';

export interface ReceiverKeys {
  /** RFC 8291 receiver public key: 65-byte uncompressed P-256 point. */
  readonly p256dh: Buffer;
  /** RFC 8291 auth secret: 16 bytes. */
  readonly auth: Buffer;
}

export type RegistrationRequest =
  | { readonly transport: 'fcm'; readonly token: string }
  | { readonly transport: 'unifiedpush'; readonly token: string; readonly endpoint: URL; readonly keys: ReceiverKeys | null };

export interface RegistrationPolicy {
  /** The instance has FCM credentials (`GET /api/push/config` says `fcm: true`). */
  readonly fcmEnabled: boolean;
  readonly allowHttp: boolean;
}

const optionalKey = z.string({ error: 'must be a base64url string' }).nullish();

const bodySchema = z.object(
  {
    transport: z.enum(['fcm', 'unifiedpush'], { error: 'must be "fcm" or "unifiedpush"' }),
    token: z.string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') }),
    p256dh: optionalKey,
    auth: optionalKey,
  },
  { error: 'must be a JSON object' },
);

/** Throws `ApiError('invalid_request')` naming the first field that breaks a rule. */
export function parseRegistrationRequest(body: unknown, policy: RegistrationPolicy): RegistrationRequest {
  const parsed = bodySchema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw invalid(issue.path.length === 0 ? 'body' : issue.path.join('.'), issue.message);
  }
  const { transport, token, p256dh, auth } = parsed.data;
  if (transport === 'fcm') return { transport, token: fcmToken(token, policy, p256dh ?? auth) };
  const endpoint = parseEndpoint(token, policy);
  if (typeof endpoint === 'string') throw invalid('token', endpoint);
  return { transport, token, endpoint, keys: receiverKeys(p256dh, auth) };
}

function fcmToken(token: string, policy: RegistrationPolicy, key: string | null | undefined): string {
  if (!policy.fcmEnabled) throw invalid('transport', 'fcm is not available on this instance (GET /api/push/config says fcm: false)');
  if (key !== null && key !== undefined) throw invalid('p256dh', 'keys are for unifiedpush only');
  if (token.length === 0) throw invalid('token', 'must not be empty');
  if (Buffer.byteLength(token, 'utf8') > maxFcmTokenBytes) throw invalid('token', `must be at most ${maxFcmTokenBytes} bytes`);
  if (/\s/u.test(token) || hasControlOrLoneSurrogate(token)) throw invalid('token', 'must not contain whitespace or control characters');
  return token;
}

function receiverKeys(p256dh: string | null | undefined, auth: string | null | undefined): ReceiverKeys | null {
  const given = [p256dh, auth].filter((value) => value !== null && value !== undefined).length;
  if (given === 0) return null;
  if (given === 1) throw invalid(p256dh === null || p256dh === undefined ? 'p256dh' : 'auth', 'p256dh and auth go together: give both or neither');
  const point = decodeBase64Url(p256dh!);
  if (point === undefined || !isUncompressedP256Point(point)) {
    throw invalid('p256dh', 'must be base64url of a 65-byte uncompressed point on P-256');
  }
  const secret = decodeBase64Url(auth!);
  if (secret === undefined || secret.length !== 16) throw invalid('auth', 'must be base64url of 16 bytes');
  return { p256dh: point, auth: secret };
}

function invalid(field: string, problem: string): ApiError {
  return new ApiError('invalid_request', `${field}: ${problem}`);
}

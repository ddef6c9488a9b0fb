/**
 * The body of `PUT /api/push/registration` (docs/design.md, Device API), validated into what gets stored.
 * Unknown fields are ignored — in particular `user_id` / `device_id`: the device is the token's.
 *
 * docs/openapi.yaml states these rules as the `RegistrationRequest` schema; the patterns
 * below are its patterns word for word (a unit test holds them equal, and the generated-request
 * tier holds the whole schema to what this accepts). Checks run in a fixed order so that the
 * first broken rule is the one named; the rules a schema cannot state are marked "run time".
 */
import { decodeBase64Url } from './base64url.js';
import { ApiError } from './errors.js';
import { hasControlOrLoneSurrogate } from './identity.js';
import { isUncompressedP256Point } from './p256.js';
import { parseEndpoint } from './unifiedpush-endpoint.js';

export const maxFcmTokenBytes = 2048;

/**
 * `FcmToken`: the shape of the tokens FCM issues — the app instance's id (URL-safe base64), a
 * colon, then the registration proper, which starts `APA91b` (URL-safe base64). ASCII, so its
 * at most 2048 characters are at most 2048 bytes. A string of another shape is no FCM token:
 * stored, its sends would only be refused as dead tokens.
 */
export const fcmTokenPattern = '^[A-Za-z0-9_-]+:APA91b[A-Za-z0-9_-]+$';
/** `ReceiverPublicKey`: base64url of 65 bytes whose first is 0x04 (uncompressed), padding optional. */
export const p256dhPattern = '^B[A-P][A-Za-z0-9_-]{84}[AEIMQUYcgkosw048]=?$';
/** `AuthSecret`: base64url of 16 bytes, padding optional. */
export const authPattern = '^[A-Za-z0-9_-]{21}[AQgw](==)?$';

const fcmToken = new RegExp(fcmTokenPattern);
const p256dhText = new RegExp(p256dhPattern);
const authText = new RegExp(authPattern);

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

/** A key field: absent and `null` both mean "not given". */
type KeyField = string | null | undefined;

/** Throws `ApiError('invalid_request')` naming the first field that breaks a rule. */
export function parseRegistrationRequest(body: unknown, policy: RegistrationPolicy): RegistrationRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalid('body', 'must be a JSON object');
  const { transport, token, p256dh, auth } = body as Record<string, unknown>;
  if (transport !== 'fcm' && transport !== 'unifiedpush') throw invalid('transport', 'must be "fcm" or "unifiedpush"');
  if (token === undefined) throw invalid('token', 'is required');
  if (typeof token !== 'string') throw invalid('token', 'must be a string');
  const keys = { p256dh: keyField('p256dh', p256dh), auth: keyField('auth', auth) };
  if (transport === 'fcm') return { transport, token: validFcmToken(token, policy, keys.p256dh ?? keys.auth) };
  const endpoint = parseEndpoint(token, policy);
  if (typeof endpoint === 'string') throw invalid('token', endpoint);
  return { transport, token, endpoint, keys: receiverKeys(keys.p256dh, keys.auth) };
}

function keyField(field: string, value: unknown): KeyField {
  if (value === undefined || value === null || typeof value === 'string') return value;
  throw invalid(field, 'must be a base64url string');
}

function validFcmToken(token: string, policy: RegistrationPolicy, key: KeyField): string {
  // Run time: whether this instance has FCM credentials.
  if (!policy.fcmEnabled) throw invalid('transport', 'fcm is not available on this instance (GET /api/push/config says fcm: false)');
  if (key !== null && key !== undefined) throw invalid('p256dh', 'keys are for unifiedpush only');
  if (token.length === 0) throw invalid('token', 'must not be empty');
  if (Buffer.byteLength(token, 'utf8') > maxFcmTokenBytes) throw invalid('token', `must be at most ${maxFcmTokenBytes} bytes`);
  if (/\s/u.test(token) || hasControlOrLoneSurrogate(token)) throw invalid('token', 'must not contain whitespace or control characters');
  if (!fcmToken.test(token))
    throw invalid('token', 'must be an FCM registration token: the app instance id, ":", then "APA91b…", in URL-safe base64');
  return token;
}

function receiverKeys(p256dh: KeyField, auth: KeyField): ReceiverKeys | null {
  const given = [p256dh, auth].filter((value) => value !== null && value !== undefined).length;
  if (given === 0) return null;
  if (given === 1) throw invalid(p256dh === null || p256dh === undefined ? 'p256dh' : 'auth', 'p256dh and auth go together: give both or neither');
  // The pattern states length, alphabet and the 0x04 prefix; being on the curve is run time.
  const point = p256dhText.test(p256dh!) ? decodeBase64Url(p256dh!) : undefined;
  if (point === undefined || !isUncompressedP256Point(point)) {
    throw invalid('p256dh', 'must be base64url of a 65-byte uncompressed point on P-256');
  }
  const secret = authText.test(auth!) ? decodeBase64Url(auth!) : undefined;
  if (secret === undefined || secret.length !== 16) throw invalid('auth', 'must be base64url of 16 bytes');
  return { p256dh: point, auth: secret };
}

function invalid(field: string, problem: string): ApiError {
  return new ApiError('invalid_request', `${field}: ${problem}`);
}

/**
 * OAuth access tokens for FCM from the service account: the JWT-bearer grant of RFC 7523, as
 * Google's token endpoint takes it. An RS256 assertion — issued by the account's email, for
 * the key file's `token_uri` as audience, scope firebase.messaging, valid one hour, `kid` the
 * key's id — is posted as `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer` to that
 * `token_uri` (the key file says where, so a stand-in or a private endpoint
 * works as Google does). The token is cached and fetched again five minutes before it
 * expires, one request at a time for every send; a 401 from FCM drops it.
 *
 * No retry here: a failed token request fails the send, which Temporal retries as a whole.
 */
import { createPrivateKey, type KeyObject } from 'node:crypto';
import { SignJWT } from 'jose';
import { request } from 'undici';
import type { FcmCredentials } from '../config/index.js';

export const fcmScope = 'https://www.googleapis.com/auth/firebase.messaging';

const jwtBearerGrant = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
const assertionLifetimeSeconds = 3_600;
/** A cached token is replaced this long before it expires. */
const refreshBeforeExpiryMs = 5 * 60_000;
/** Token endpoint answers are small; anything longer is not one. */
const answerCapBytes = 64 * 1024;

export interface AccessTokens {
  /** A valid access token (cached; fetched when missing or about to expire). */
  get(): Promise<string>;
  /** FCM refused `token` (401): forget it, so the next `get` fetches a new one. */
  invalidate(token: string): void;
}

/** The token endpoint answered, but not with a token. */
export class TokenEndpointError extends Error {
  constructor(
    readonly status: number,
    /** The OAuth `error` code when the answer had one (e.g. invalid_grant): safe to log. */
    readonly oauthError: string | undefined,
  ) {
    super(`the OAuth token endpoint answered ${status}${oauthError === undefined ? '' : ` ${oauthError}`}`);
    this.name = 'TokenEndpointError';
  }
}

export function createAccessTokens(credentials: FcmCredentials, timeoutMs: number, now: () => number = Date.now): AccessTokens {
  const key = createPrivateKey(credentials.privateKey);
  let cached: { token: string; refreshAt: number } | undefined;
  let pending: Promise<string> | undefined; // one token request at a time, shared by all sends

  const fetchToken = async (): Promise<string> => {
    const issuedAt = now();
    const answer = await requestToken(credentials, key, issuedAt, timeoutMs);
    cached = { token: answer.token, refreshAt: issuedAt + answer.expiresInMs - refreshBeforeExpiryMs };
    return answer.token;
  };

  return {
    get() {
      if (cached !== undefined && now() < cached.refreshAt) return Promise.resolve(cached.token);
      pending ??= fetchToken().finally(() => {
        pending = undefined;
      });
      return pending;
    },
    invalidate(token) {
      // Several sends may have used the refused token; only the first one drops it.
      if (cached?.token === token) cached = undefined;
    },
  };
}

async function requestToken(
  credentials: FcmCredentials,
  key: KeyObject,
  issuedAt: number,
  timeoutMs: number,
): Promise<{ token: string; expiresInMs: number }> {
  const iat = Math.floor(issuedAt / 1_000);
  const assertion = await new SignJWT({ scope: fcmScope })
    .setProtectedHeader({ alg: 'RS256', typ: 'JWT', ...(credentials.privateKeyId === undefined ? {} : { kid: credentials.privateKeyId }) })
    .setIssuer(credentials.clientEmail)
    .setAudience(credentials.tokenUri)
    .setIssuedAt(iat)
    .setExpirationTime(iat + assertionLifetimeSeconds)
    .sign(key);
  const response = await request(credentials.tokenUri, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: new URLSearchParams({ grant_type: jwtBearerGrant, assertion }).toString(),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const body = await readJson(response.body);
  const fields = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
  const token = fields.access_token;
  if (response.statusCode !== 200 || typeof token !== 'string' || token === '') {
    throw new TokenEndpointError(response.statusCode, typeof fields.error === 'string' ? fields.error.slice(0, 100) : undefined);
  }
  const expiresIn = typeof fields.expires_in === 'number' && fields.expires_in > 0 ? fields.expires_in : assertionLifetimeSeconds;
  return { token, expiresInMs: expiresIn * 1_000 };
}

/** The answer as JSON, or undefined when it is not JSON or too long to be a token answer. */
async function readJson(body: AsyncIterable<Buffer>): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > answerCapBytes) return undefined; // leaving the loop drops the rest of the body
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    return undefined;
  }
}

/** The HTTP status the token endpoint answered, when it answered at all. */
export function tokenEndpointStatus(error: unknown): number | undefined {
  return error instanceof TokenEndpointError ? error.status : undefined;
}

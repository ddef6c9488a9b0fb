/**
 * OAuth access tokens for FCM, from the service account (google-auth-library's JWT client:
 * an RS256 JWT-bearer assertion, scope firebase.messaging, the token cached and refreshed
 * five minutes before it expires).
 *
 * google-auth-library posts the assertion to Google's token URL whatever the key file says;
 * contract §3 wants the key file's `token_uri` honoured. So the client gets its own HTTP
 * transport that sends that request to `token_uri` instead, and the assertion's audience is
 * set to the same URL (which is what Google's own key files contain).
 */
import { gaxios, JWT } from 'google-auth-library';
import type { FcmCredentials } from '../config/index.js';

export const fcmScope = 'https://www.googleapis.com/auth/firebase.messaging';

/** Where google-auth-library 10 sends every service-account token request. */
const googleTokenUrl = 'https://oauth2.googleapis.com/token';

export interface AccessTokens {
  /** A valid access token (cached; fetched when missing or about to expire). */
  get(): Promise<string>;
  /** FCM refused `token` (401): forget it, so the next `get` fetches a new one. */
  invalidate(token: string): void;
}

export function createAccessTokens(credentials: FcmCredentials, timeoutMs: number): AccessTokens {
  let client = newClient(credentials, timeoutMs);
  let pending: Promise<string> | undefined; // one token request at a time, shared by all sends

  const fetchToken = async (): Promise<string> => {
    const { token } = await client.getAccessToken();
    if (token === null || token === undefined || token === '') throw new Error('the token endpoint returned no access token');
    return token;
  };

  return {
    get() {
      pending ??= fetchToken().finally(() => {
        pending = undefined;
      });
      return pending;
    },
    invalidate(token) {
      // Several sends may have used the refused token; only the first one replaces it.
      if (client.credentials.access_token === token) client = newClient(credentials, timeoutMs);
    },
  };
}

function newClient(credentials: FcmCredentials, timeoutMs: number): JWT {
  return new JWT({
    email: credentials.clientEmail,
    key: credentials.privateKey,
    keyId: credentials.privateKeyId,
    scopes: [fcmScope],
    additionalClaims: { aud: credentials.tokenUri },
    transporter: tokenTransport(credentials.tokenUri, timeoutMs),
  });
}

/** An HTTP transport that sends the token request to `tokenUri`, once, within `timeoutMs`. */
function tokenTransport(tokenUri: string, timeoutMs: number): gaxios.Gaxios {
  const transport = new gaxios.Gaxios({ timeout: timeoutMs });
  transport.interceptors.request.add({
    resolved: async (request) => {
      if (request.url.href === googleTokenUrl) request.url = new URL(tokenUri);
      // Retrying is Temporal's job (the send is retried as a whole), not a hidden loop's.
      request.retryConfig = { ...request.retryConfig, retry: 0, noResponseRetries: 0 };
      return request;
    },
  });
  return transport;
}

/** The HTTP status the token endpoint answered, when it answered at all. */
export function tokenEndpointStatus(error: unknown): number | undefined {
  const status = (error as { response?: { status?: unknown } } | undefined)?.response?.status;
  return typeof status === 'number' ? status : undefined;
}

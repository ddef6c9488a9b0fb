/**
 * OAuth access tokens for FCM, fetched by google-auth-library (docs/design.md, Wakes on the wire) from one of two
 * credential sources (docs/design.md, Configuration):
 *   - the service-account key: a JWT client, pointed at the key file's `token_uri`
 *     (google-token-uri.ts: the library alone always posts to Google's endpoint);
 *   - Application Default Credentials: whatever GoogleAuth finds — the file named by
 *     GOOGLE_APPLICATION_CREDENTIALS (service account, `external_account` federation,
 *     impersonated) or the metadata server (GKE Workload Identity).
 *
 * The token is cached here and fetched again five minutes before it expires, one request at
 * a time for every send; while that fails, sends go on with the current token until shortly
 * before it expires. A 401 from FCM drops it. Each fetch builds a fresh client, so no
 * cache inside the library can hand back a token FCM refused. Once `keepFresh` is called (the
 * worker does at start) a token is fetched at once and again before each expires, so the
 * expiry gauge says when FCM would stop working, whether or not wakes are being sent.
 *
 * A failed fetch is tried again with back-off (1 s, doubling, at most 30 s) until one succeeds.
 * Discovery is tried afresh each time: a credential file that appears after the worker started
 * is read, and google-auth-library's process-wide memo of "no metadata server here" (gcp-metadata
 * keeps its first answer for the life of the process) is forgotten after a failure, so a GKE
 * metadata server that answers only seconds after the pod started is found.
 *
 * A failed fetch counts on `push_fcm_token_refresh_failures_total` and logs an alert line of
 * its own (`"alert":"fcm-token-refresh"`). What is logged or returned is a status, an OAuth
 * error code or a network cause — never a library message, which may quote a request (the
 * signed assertion, a subject token) or a credential file. A deadline bounds each fetch, and
 * the library's own retries are off where it takes transport options: a failed token request
 * fails the send, which Temporal retries as a whole.
 */
import { gcpMetadata, GoogleAuth, JWT, type AuthClient } from 'google-auth-library';
import type { FcmCredentials, ServiceAccountKey } from '../config/index.js';
import type { Logger } from '../observability/log.js';
import { honourTokenUri } from './google-token-uri.js';
import { tokenExpiry, tokenRefreshFailures } from './metrics.js';
import { describeFailure } from './safe-http.js';

export const fcmScope = 'https://www.googleapis.com/auth/firebase.messaging';

/** A cached token is replaced this long before it expires. */
const refreshBeforeExpiryMs = 5 * 60_000;
/** A token is not sent this close to its expiry (clocks differ, a request takes time). */
const lastUseBeforeExpiryMs = 30_000;
/** Google's tokens live an hour; assumed when a source does not say. */
const defaultLifetimeMs = 3_600_000;
/** After a success the next fetch comes no sooner than this (a short-lived token must not make the renewal spin). */
const minRenewalMs = 30_000;
/** After failed fetches in a row the next try comes after `firstRetryMs` doubled per failure, at most `maxRetryMs`. */
export const retryBackoff = { firstRetryMs: 1_000, maxRetryMs: 30_000 } as const;

/** The wait before the next try after `failures` failed fetches in a row (at least one). */
export function retryDelayMs(failures: number): number {
  return Math.min(retryBackoff.maxRetryMs, retryBackoff.firstRetryMs * 2 ** Math.min(Math.max(failures - 1, 0), 20));
}

export interface AccessTokens {
  /** A valid access token (cached; fetched when missing or about to expire). */
  get(): Promise<string>;
  /** FCM refused `token` (401): forget it, so the next `get` fetches a new one. */
  invalidate(token: string): void;
  /** Fetches a token now, and again before each one expires, until `close`. */
  keepFresh(): void;
  /** Called when a token is fetched after failed fetches: the credentials work again (or at last). */
  onRecovered(listener: () => void): void;
  /**
   * A wake held back for want of a token has been recorded. If a usable token was fetched
   * meanwhile, the recovery was announced before that hold existed: it is announced again, so
   * the hold ends with the others rather than at its own back-off.
   */
  holdRecorded(): void;
  close(): void;
}

/** No token: why, in words safe to log, and whether it is the configuration's to fix. */
export class TokenFetchError extends Error {
  constructor(
    readonly reason: string,
    /** The token endpoint refused the credentials, or there are none: retrying will not help. */
    readonly permanent: boolean,
    /** The HTTP status of the token endpoint's answer, when it answered. */
    readonly status: number | undefined,
  ) {
    super(reason);
    this.name = 'TokenFetchError';
  }
}

/** A token sends may still use: not within `lastUseBeforeExpiryMs` of its expiry. */
function usable(token: Fetched | undefined): token is Fetched {
  return token !== undefined && Date.now() < token.expiresAt - lastUseBeforeExpiryMs;
}

export interface AccessTokenOptions {
  readonly projectId: string;
  /** Longest one token fetch may take. */
  readonly timeoutMs: number;
  readonly log: Logger;
}

interface Fetched {
  readonly token: string;
  /** Epoch ms. */
  readonly expiresAt: number;
}

export function createAccessTokens(credentials: FcmCredentials, options: AccessTokenOptions): AccessTokens {
  const source = credentials.kind === 'key' ? 'key' : 'adc';
  let cached: Fetched | undefined;
  let pending: Promise<string> | undefined; // one token request at a time, shared by all sends
  let timer: NodeJS.Timeout | undefined;
  let refreshing = false;
  let closed = false;
  let failuresInARow = 0;
  const recoveredListeners: Array<() => void> = [];

  const fetchToken = async (): Promise<string> => {
    try {
      const fetched = await withDeadline(fetchFromGoogle(credentials, options), options.timeoutMs);
      cached = fetched;
      if (failuresInARow > 0) for (const listener of recoveredListeners) listener();
      failuresInARow = 0;
      tokenExpiry.set(fetched.expiresAt / 1_000);
      schedule(Math.max(fetched.expiresAt - refreshBeforeExpiryMs - Date.now(), minRenewalMs));
      return fetched.token;
    } catch (error) {
      const failure = tokenFetchError(error);
      failuresInARow++;
      if (credentials.kind === 'adc') forgetDiscovery();
      tokenRefreshFailures.inc();
      const holdsUntil = cached !== undefined && Date.now() < cached.expiresAt ? new Date(cached.expiresAt).toISOString() : undefined;
      options.log.error(
        {
          alert: 'fcm-token-refresh',
          source,
          reason: failure.reason,
          ...(failure.status === undefined ? {} : { status: failure.status }),
          ...(holdsUntil === undefined ? {} : { tokenExpiresAt: holdsUntil }),
        },
        holdsUntil === undefined
          ? `FCM access token refresh FAILED (${failure.reason}): FCM wakes fail until a token is fetched`
          : `FCM access token refresh FAILED (${failure.reason}): the current token holds until ${holdsUntil}, FCM wakes fail after`,
      );
      schedule(retryDelayMs(failuresInARow));
      // A token inside its renewal margin still works: sends go on with it until shortly before it expires.
      if (usable(cached)) return cached.token;
      throw failure;
    }
  };

  const get = (): Promise<string> => {
    if (cached !== undefined && Date.now() < cached.expiresAt - refreshBeforeExpiryMs) return Promise.resolve(cached.token);
    pending ??= fetchToken().finally(() => {
      pending = undefined;
    });
    return pending;
  };

  function schedule(delayMs: number): void {
    if (!refreshing || closed) return;
    clearTimeout(timer);
    timer = setTimeout(() => void get().catch(() => undefined), delayMs);
    timer.unref();
  }

  return {
    get,
    invalidate(token) {
      // Several sends may have used the refused token; only the first one drops it.
      if (cached?.token === token) cached = undefined;
    },
    onRecovered: (listener) => void recoveredListeners.push(listener),
    holdRecorded() {
      if (usable(cached)) for (const listener of recoveredListeners) listener();
    },
    keepFresh() {
      refreshing = true;
      void get().catch(() => undefined); // a failure is counted and logged where it happens
    },
    close() {
      closed = true;
      clearTimeout(timer);
    },
  };
}

async function fetchFromGoogle(credentials: FcmCredentials, options: AccessTokenOptions): Promise<Fetched> {
  const client = credentials.kind === 'key' ? keyClient(credentials.key, options.timeoutMs) : await adcClient(options);
  const { token } = await client.getAccessToken();
  if (typeof token !== 'string' || token === '') throw new TokenFetchError('the token endpoint answered without a token', false, undefined);
  const expiry = client.credentials.expiry_date;
  return { token, expiresAt: typeof expiry === 'number' && expiry > 0 ? expiry : Date.now() + defaultLifetimeMs };
}

/** No retries of the library's own (module comment), and a deadline on each request. */
function transporterOptions(timeoutMs: number) {
  return { timeout: timeoutMs, retryConfig: { retry: 0, noResponseRetries: 0 } };
}

function keyClient(key: ServiceAccountKey, timeoutMs: number): AuthClient {
  const client = new JWT({
    email: key.clientEmail,
    key: key.privateKey,
    keyId: key.privateKeyId,
    scopes: [fcmScope],
    transporterOptions: transporterOptions(timeoutMs),
  });
  honourTokenUri(client, key.tokenUri);
  return client;
}

/**
 * Forgets what Application Default Credentials discovery learnt: gcp-metadata's memo of whether
 * a metadata server answers (module-wide, shared by every GoogleAuth of the process). Our clients
 * are built afresh for every fetch, so nothing else is kept.
 */
function forgetDiscovery(): void {
  gcpMetadata.resetIsAvailableCache();
}

async function adcClient(options: AccessTokenOptions): Promise<AuthClient> {
  // The project is given, so GoogleAuth never goes looking for one (gcloud, Resource Manager).
  const auth = new GoogleAuth({
    scopes: [fcmScope],
    projectId: options.projectId,
    clientOptions: { transporterOptions: transporterOptions(options.timeoutMs) },
  });
  return auth.getClient();
}

function withDeadline<T>(work: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new TokenFetchError('timeout', false, undefined)), timeoutMs);
  });
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}

const noAdcMessage = 'Could not load the default credentials';
const unreadableFileMessage = 'Unable to read the credential file';

/** What went wrong, in words safe to log (module comment). */
export function tokenFetchError(error: unknown): TokenFetchError {
  if (error instanceof TokenFetchError) return error;
  const status = httpStatus(error);
  if (status !== undefined) {
    const permanent = status >= 400 && status < 500 && status !== 408 && status !== 429;
    const oauthError = permanent ? oauthErrorCode(error) : undefined;
    return new TokenFetchError(`token endpoint answered ${status}${oauthError === undefined ? '' : ` ${oauthError}`}`, permanent, status);
  }
  if (error instanceof Error && error.message.startsWith(noAdcMessage)) {
    return new TokenFetchError(
      'no Application Default Credentials found (GOOGLE_APPLICATION_CREDENTIALS unset, no metadata server)',
      true,
      undefined,
    );
  }
  if (error instanceof Error && error.message.startsWith(unreadableFileMessage)) {
    return new TokenFetchError('the credential file named by GOOGLE_APPLICATION_CREDENTIALS cannot be read (not there yet?)', true, undefined);
  }
  if (error instanceof RangeError && error.message.includes('Metadata-Flavor')) {
    return new TokenFetchError('the metadata server answered without Metadata-Flavor: Google', false, undefined);
  }
  const network = describeFailure(error).reason;
  if (network !== 'network error') return new TokenFetchError(`token endpoint ${network}`, false, undefined);
  return new TokenFetchError(`credential error (${error instanceof Error ? error.name : typeof error})`, false, undefined);
}

function httpStatus(error: unknown): number | undefined {
  const e = error as { status?: unknown; response?: { status?: unknown } } | null;
  const status = e?.response?.status ?? e?.status;
  return typeof status === 'number' && status >= 100 && status < 600 ? status : undefined;
}

/** The OAuth `error` code of the answer (e.g. invalid_grant): a fixed vocabulary, safe to log. */
function oauthErrorCode(error: unknown): string | undefined {
  const data = (error as { response?: { data?: unknown } }).response?.data;
  const code = typeof data === 'object' && data !== null ? (data as { error?: unknown }).error : undefined;
  return typeof code === 'string' && /^[a-z_]{1,64}$/.test(code) ? code : undefined;
}

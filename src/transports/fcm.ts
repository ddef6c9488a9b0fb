/**
 * FCM HTTP v1: `POST {FCM_ENDPOINT}/v1/projects/{project}/messages:send` with the OAuth
 * bearer from google-auth-library (fcm-auth.ts) and exactly the body of docs/design.md, Wakes on the wire — a data-only wake,
 * `collapse_key: "wake"` and a one-hour TTL, so a phone coming back online gets one wake.
 *
 * Errors are classified by the table of fcm-errors.ts. A 401 means our access token went
 * stale: it is refreshed and the wake sent once more. Token-related 400/403 answers prune
 * only while the prune breaker is closed.
 */
import type { Dispatcher } from 'undici';
import { type AccessTokens, tokenFetchError } from './fcm-auth.js';
import { classifyFcmError, type FcmVerdict } from './fcm-errors.js';
import type { PruneBreaker } from './breaker.js';
import { prunesWithheld } from './metrics.js';
import { parseRetryAfter } from './retry-after.js';
import { describeFailure, postWithDeadline, type PostAnswer } from './safe-http.js';
import { type RegistrationForSend, type ProviderAnswer, type PushSender, wakePayload } from './types.js';
import type { WakePriority } from '../../domain/vocabulary.js';

export interface FcmOptions {
  readonly projectId: string;
  /** FCM_ENDPOINT, without a trailing slash. */
  readonly endpoint: string;
  readonly tokens: AccessTokens;
  readonly dispatcher: Dispatcher;
  readonly deadlineMs: number;
  readonly bodyCapBytes: number;
  readonly breaker: PruneBreaker;
  readonly now?: () => number;
}

const wakeData = JSON.parse(wakePayload) as Record<string, string>;

/** The request body, byte for byte (docs/design.md, Wakes on the wire). */
export function fcmMessage(token: string, priority: WakePriority): string {
  return JSON.stringify({
    message: {
      token,
      data: wakeData,
      android: { priority: priority === 'high' ? 'HIGH' : 'NORMAL', collapse_key: 'wake', ttl: '3600s' },
    },
  });
}

export function createFcmSender(options: FcmOptions): PushSender {
  const url = `${options.endpoint}/v1/projects/${encodeURIComponent(options.projectId)}/messages:send`;
  const now = options.now ?? Date.now;

  async function send(
    registration: RegistrationForSend,
    priority: WakePriority,
    retriedAfter401: boolean,
    signal: AbortSignal | undefined,
  ): Promise<ProviderAnswer> {
    let bearer: string;
    try {
      // The token request is shared by every send waiting for it: a cancelled send stops
      // waiting, the request goes on for the others.
      bearer = await untilAborted(options.tokens.get(), signal);
    } catch (error) {
      if (signal?.aborted === true) return cancelled;
      return tokenFailure(error);
    }
    let answer: PostAnswer;
    try {
      answer = await postWithDeadline(url, {
        dispatcher: options.dispatcher,
        headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json; charset=utf-8' },
        body: fcmMessage(registration.token, priority),
        deadlineMs: options.deadlineMs,
        bodyCapBytes: options.bodyCapBytes,
        signal,
      });
    } catch (error) {
      if (signal?.aborted === true) return cancelled;
      // No answer from Google: our network or FCM as a whole, never the token's doing.
      return { kind: 'deferred', cause: 'failing', reason: `FCM ${describeFailure(error).reason}`, blame: 'network' };
    }
    if (answer.status >= 200 && answer.status < 300) return { kind: 'delivered', status: answer.status };
    const verdict = classifyFcmError(answer.status, parseJson(answer.body));
    if (verdict.kind !== 'refresh-token') return outcomeOf(verdict, answer, registration.id);
    options.tokens.invalidate(bearer);
    if (!retriedAfter401) return send(registration, priority, true, signal);
    return { kind: 'misconfigured', reason: `${verdict.reason}: a fresh OAuth token was refused too` };
  }

  function outcomeOf(verdict: Exclude<FcmVerdict, { kind: 'refresh-token' }>, answer: PostAnswer, registrationId: string): ProviderAnswer {
    switch (verdict.kind) {
      case 'dead':
        if (!verdict.guarded || options.breaker.record(registrationId)) return { kind: 'dead', reason: verdict.reason };
        prunesWithheld.inc();
        return { kind: 'misconfigured', reason: `${verdict.reason}; not pruned: the prune breaker is open` };
      case 'failing': {
        const retryAfterMs = parseRetryAfter(answer.headers['retry-after'], now());
        const after = retryAfterMs === undefined ? {} : { retryAfterMs };
        return { kind: 'deferred', cause: 'failing', reason: verdict.reason, blame: 'endpoint', ...after };
      }
      case 'rate_limited':
        return {
          kind: 'deferred',
          cause: 'rate_limited',
          reason: verdict.reason,
          retryAfterMs: Math.max(parseRetryAfter(answer.headers['retry-after'], now()) ?? 0, verdict.minRetryMs),
        };
      case 'misconfigured':
        return verdict;
    }
  }

  return {
    name: 'fcm',
    send(registration, priority, signal) {
      options.breaker.isOpen(); // lets a breaker that saw no new answers close on time
      return send(registration, priority, false, signal);
    },
  };
}

/** What a cancelled send returns (its caller, the cancelled activity, records nothing). */
const cancelled: ProviderAnswer = { kind: 'cancelled' };

/** `promise`, or a rejection as soon as `signal` aborts. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return promise;
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** No token: refused credentials or none at all (misconfigured), or a token endpoint that could not answer (failing). */
function tokenFailure(error: unknown): ProviderAnswer {
  const failure = tokenFetchError(error);
  if (failure.permanent) return { kind: 'misconfigured', reason: `FCM credentials refused: ${failure.reason}`, noToken: true };
  return { kind: 'deferred', cause: 'failing', reason: `OAuth ${failure.reason}`, blame: 'token-endpoint' };
}

function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}

/**
 * The transports of one worker process, built once at start from the configuration:
 * FCM (disabled, answering `misconfigured`, when there are no credentials) and UnifiedPush,
 * behind the outage detector. The send activity calls `send`, which picks the transport of the
 * registration, holds the wake back while its origin is in outage (but for a probe now and
 * then), and judges a failure: the endpoint's own (counted toward the ten) or not.
 * `close` releases the connection pools on shutdown.
 */
import { randomBytes } from 'node:crypto';
import { Agent } from 'undici';
import type { WorkerConfig } from '../config/index.js';
import type { Logger } from '../observability/log.js';
import { createPruneBreaker, defaultBreaker } from './breaker.js';
import { type AccessTokens, createAccessTokens } from './fcm-auth.js';
import { createFcmSender } from './fcm.js';
import { breakerOpen, breakerTrips, outageDeferrals, outageGauge, sendFailures } from './metrics.js';
import { instrumentedSender } from './instrumented-sender.js';
import {
  createOutageDetector,
  originKey,
  parseOriginKey,
  type OriginKey,
  type OutageDetector,
  type OutageDetectorOptions,
} from './outage-detector.js';
import { requestDeadlineMs } from '../../domain/send-time-limit.js';
import { createOriginLabeler, type OriginLabeler } from './origin-label.js';
import { createGuardedAgent, type Resolve } from './safe-http.js';
import type { DeliveryOutcome, RegistrationForSend, PushSender, WakeSender } from './types.js';
import { createUnifiedPushSender } from './unifiedpush.js';
import { createVapidSigner } from './vapid.js';
import type { TransportName, WakePriority } from '../../domain/vocabulary.js';

export type { DeliveryOutcome, RegistrationForSend, WakeSender } from './types.js';

export interface TransportOptions {
  /** Total time for one UnifiedPush request (10 s: an attacker-chosen endpoint must not hold a send). */
  readonly unifiedPushDeadlineMs?: number;
  /** Total time for one FCM request, and for one OAuth token request. */
  readonly fcmDeadlineMs?: number;
  /** Response bytes read at most from a UnifiedPush endpoint. */
  readonly unifiedPushBodyCapBytes?: number;
  /** The FCM prune breaker's threshold (breaker.ts): at least `floor` users, `share` of the window's sends. */
  readonly breaker?: { readonly floor?: number; readonly share?: number; readonly windowMs?: number };
  /** The clock (breaker window, VAPID expiry, Retry-After dates). */
  readonly now?: () => number;
  /** DNS for UnifiedPush host names (tests point names at chosen addresses). */
  readonly resolve?: Resolve;
  /** The outage detector's windows and thresholds (outage-detector.ts). */
  readonly outage?: Omit<OutageDetectorOptions, 'onEnter' | 'onExit' | 'onShared'>;
  /**
   * The per-deployment secret under which self-hosted origins are tagged in logs and metrics
   * (origin-label.ts; the worker passes `originTagSecret(…)`). Without it, a random one: tags
   * are then stable for this process only.
   */
  readonly originTagSecret?: string;
}

/** What the worker uses: `send` (behind the outage detector) and `close`, and what watches them. */
export interface Transports extends WakeSender {
  /** FCM's access tokens (undefined while FCM is disabled); the worker calls `keepFresh` at start. */
  readonly fcmTokens: AccessTokens | undefined;
  readonly detector: OutageDetector;
  /** The transports this worker can send with (FCM only with credentials). */
  readonly configured: readonly TransportName[];
  /** How an origin is named in logs and metrics: well-known ones by name, others by tag (origin-label.ts). */
  readonly originLabel: OriginLabeler;
  /** Called when an origin's outage ends (the worker wakes the devices it deferred). */
  onOutageEnd(listener: (key: OriginKey) => void): void;
  /** The detector's clock: the latest workflow time a send came with, or the real time if later. */
  clock(): number;
  close(): Promise<void>;
}

export const defaults = {
  unifiedPushDeadlineMs: requestDeadlineMs.unifiedPush,
  fcmDeadlineMs: requestDeadlineMs.fcm,
  unifiedPushBodyCapBytes: 1024,
  // FCM's error answers are small JSON documents; this is room to spare.
  fcmBodyCapBytes: 64 * 1024,
} as const;

/** What the transports read of the worker's configuration. */
export type TransportConfig = Pick<WorkerConfig, 'fcm' | 'unifiedPush'>;

/**
 * The raw senders of one process, one per provider, and what they hold: what `createTransports`
 * puts behind the outage detector. Their answers are not judged yet (`ProviderAnswer`): only
 * src/transports, its tests and the benchmark's floor call them directly.
 */
export interface Senders {
  readonly fcm: PushSender;
  readonly unifiedpush: PushSender;
  readonly fcmTokens: AccessTokens | undefined;
  close(): Promise<void>;
}

export function createSenders(config: TransportConfig, log: Logger, options: TransportOptions = {}): Senders {
  const upDeadline = options.unifiedPushDeadlineMs ?? defaults.unifiedPushDeadlineMs;
  const upAgent = createGuardedAgent({ allowPrivate: config.unifiedPush.allowPrivate, timeoutMs: upDeadline, resolve: options.resolve });
  const fcmAgent = new Agent({ connect: { timeout: options.fcmDeadlineMs ?? defaults.fcmDeadlineMs } });
  const vapid = config.unifiedPush.vapid;
  const unifiedpush = createUnifiedPushSender({
    dispatcher: upAgent,
    allowHttp: config.unifiedPush.allowHttp,
    deadlineMs: upDeadline,
    bodyCapBytes: options.unifiedPushBodyCapBytes ?? defaults.unifiedPushBodyCapBytes,
    vapid: vapid === undefined ? undefined : createVapidSigner(vapid, { now: options.now }),
    now: options.now,
  });
  const { sender: fcm, tokens: fcmTokens } = createFcm(config, log, fcmAgent, options);
  return {
    fcm: instrumentedSender(fcm, log),
    unifiedpush: instrumentedSender(unifiedpush, log),
    fcmTokens,
    async close() {
      fcmTokens?.close();
      await Promise.all([upAgent.close(), fcmAgent.close()]);
    },
  };
}

export function createTransports(config: TransportConfig, log: Logger, options: TransportOptions = {}): Transports {
  const transportLog = log.child({ component: 'transports' });
  const senders = createSenders(config, transportLog, options);
  const outageEndListeners: Array<(key: OriginKey) => void> = [];
  const originLabel = createOriginLabeler(options.originTagSecret ?? randomBytes(32).toString('base64url'));
  const detector = createOutageDetector({
    ...options.outage,
    onEnter: (key, summary) => {
      updateOutageGauge(detector, originLabel);
      transportLog.warn(
        { alert: 'transport-outage', ...originLabel(key), failing: summary.failed, delivered: summary.delivered },
        'outage: at least half of the recently active registrations of this origin fail; its wakes are held back (a probe now and then) and no failure counts against a device',
      );
    },
    onExit: (key, why) => {
      updateOutageGauge(detector, originLabel);
      transportLog.info({ alert: 'transport-outage', ...originLabel(key), why }, 'outage over: the devices it held back are woken');
      for (const listener of outageEndListeners) listener(key);
    },
    onShared: (signature, origins, activeOrigins) => {
      transportLog.warn(
        { alert: 'transport-shared-failure', reason: signature, origins, activeOrigins },
        'the same failure from many origins at once: a fault on our side (e.g. the VAPID key); it counts against no device',
      );
    },
  });
  const keys = originKeys(config);
  let latest = -Infinity;
  return {
    fcmTokens: senders.fcmTokens,
    detector,
    configured: keys.fcm === undefined ? ['unifiedpush'] : ['unifiedpush', 'fcm'],
    originLabel,
    send: (registration, priority, now, signal) => {
      latest = Math.max(latest, now);
      return judgedSend(senders[registration.transport], detector, keys, { registration, priority, now, signal });
    },
    credentialHoldRecorded: (transport) => {
      if (transport === 'fcm') senders.fcmTokens?.holdRecorded();
    },
    onOutageEnd: (listener) => void outageEndListeners.push(listener),
    clock: () => Math.max(Date.now(), latest),
    close: () => senders.close(),
  };
}

interface OriginKeys {
  /** FCM's own origin and its OAuth token endpoint's (none while FCM is disabled). */
  readonly fcm: { readonly send: OriginKey; readonly oauth: OriginKey } | undefined;
}

function originKeys(config: TransportConfig): OriginKeys {
  const { credentials, endpoint } = config.fcm;
  if (credentials === undefined) return { fcm: undefined };
  // Application Default Credentials may come from several endpoints (metadata server, STS,
  // IAM Credentials): they are watched as one.
  const oauthOrigin = credentials.kind === 'key' ? new URL(credentials.key.tokenUri).origin : 'application-default-credentials';
  return { fcm: { send: originKey('fcm', new URL(endpoint).origin), oauth: originKey('fcm-oauth', oauthOrigin) } };
}

function unifiedPushKey(endpoint: string): OriginKey | undefined {
  try {
    return originKey('unifiedpush', new URL(endpoint).origin);
  } catch {
    return undefined; // never posted to: the transport answers dead
  }
}

/** One send through the detector: held back in an outage, judged after (module comment). */
async function judgedSend(
  transport: PushSender,
  detector: OutageDetector,
  keys: OriginKeys,
  wake: { registration: RegistrationForSend; priority: WakePriority; now: number; signal: AbortSignal | undefined },
): Promise<DeliveryOutcome> {
  const { registration, priority, now, signal } = wake;
  const isFcm = registration.transport === 'fcm';
  const main = isFcm ? keys.fcm?.send : unifiedPushKey(registration.token);
  const watched = [isFcm ? keys.fcm?.oauth : undefined, main].filter((key): key is OriginKey => key !== undefined);
  const blocked = watched.find((key) => !detector.admit(key, registration.id, now));
  if (blocked !== undefined) {
    outageDeferrals.inc({ transport: registration.transport });
    const reason = `${parseOriginKey(blocked).provider} outage: held back`;
    return { kind: 'deferred', cause: 'outage', reason, counts: false, origin: blocked, ...until(now, detector.retryAfterHint(blocked, now)) };
  }
  const answer = await transport.send(registration, priority, signal);
  // Cut short by its activity's cancellation: the answer (if any) was never read; it says
  // nothing about the origin, and the activity records nothing.
  if (signal?.aborted === true) return { kind: 'cancelled' };
  switch (answer.kind) {
    case 'delivered':
      for (const key of watched) detector.record(key, registration.id, true, now);
      return answer;
    case 'dead':
    case 'misconfigured':
    case 'cancelled':
      return answer;
  }
  if (answer.cause === 'rate_limited') {
    // A rate limit is the registration's own back-off, honoured exactly: a UnifiedPush 429 is
    // one endpoint's (the spec: per endpoint), FCM's QUOTA_EXCEEDED one device's message
    // rate. It is no failure of the origin and never holds back another device's wake. (A
    // project-wide FCM quota answers every device alike: each backs off on its own, ≥ 60 s.)
    return { kind: 'deferred', cause: 'rate_limited', reason: answer.reason, counts: false, ...until(now, answer.retryAfterMs) };
  }
  const key = answer.blame === 'token-endpoint' ? keys.fcm?.oauth : main;
  const failing = { kind: 'deferred', cause: 'failing', reason: answer.reason, ...until(now, answer.retryAfterMs) } as const;
  if (key === undefined || answer.blame === 'internal') {
    sendFailures.inc({ transport: registration.transport, counted: 'no' });
    return { ...failing, counts: false };
  }
  detector.record(key, registration.id, false, now, answer.retryAfterMs, failureSignature(answer.reason));
  const counts = detector.counts(key, registration.id, answer.blame, now);
  sendFailures.inc({ transport: registration.transport, counted: counts ? 'yes' : 'no' });
  return { ...failing, counts, ...(detector.inOutage(key) ? { origin: key } : {}) };
}

/**
 * What makes two failures "the same" across origins (outage-detector.ts, "ours"): the reason,
 * a fixed text, with a distributor's 401 and 403 taken as one (both refuse our authorization,
 * e.g. a VAPID key rotated on our side).
 */
export function failureSignature(reason: string): string {
  return /^UnifiedPush 40[13]$/.test(reason) ? 'UnifiedPush 401/403' : reason;
}

/** The provider's Retry-After, if it gave one, as a time on the workflow's clock. */
function until(now: number, retryAfterMs: number | undefined): { until?: number } {
  return retryAfterMs === undefined ? {} : { until: now + retryAfterMs };
}

/** At most this many origins are named on the gauge; more would make its labels unbounded. */
const maxOutageLabels = 50;

function updateOutageGauge(detector: OutageDetector, originLabel: OriginLabeler): void {
  const keys = detector.outages().sort();
  outageGauge.reset();
  for (const key of keys.slice(0, maxOutageLabels)) outageGauge.set({ ...originLabel(key) }, 1);
  const others = keys.slice(maxOutageLabels);
  if (others.length > 0) outageGauge.set({ provider: 'unifiedpush', origin: '(others)' }, others.length);
}

function createFcm(
  config: TransportConfig,
  log: Logger,
  dispatcher: Agent,
  options: TransportOptions,
): { sender: PushSender; tokens: AccessTokens | undefined } {
  const { credentials, projectId } = config.fcm;
  if (credentials === undefined || projectId === undefined) {
    log.info('FCM disabled');
    const sender: PushSender = {
      name: 'fcm',
      send: async () => ({ kind: 'misconfigured', reason: 'FCM disabled: no FCM credential source on this worker' }),
    };
    return { sender, tokens: undefined };
  }
  const deadlineMs = options.fcmDeadlineMs ?? defaults.fcmDeadlineMs;
  const breaker = createPruneBreaker({
    floor: options.breaker?.floor ?? defaultBreaker.floor,
    share: options.breaker?.share ?? defaultBreaker.share,
    windowMs: options.breaker?.windowMs ?? defaultBreaker.windowMs,
    now: options.now,
    onOpen: (users, threshold) => {
      breakerOpen.set(1);
      breakerTrips.inc();
      log.error(
        { alert: 'fcm-prune-breaker', users, threshold },
        'FCM prune breaker OPEN: too many devices got token-related 400/403 answers at once — likely our project, credentials or payload; registrations are no longer deleted on these answers',
      );
    },
    onClose: () => {
      breakerOpen.set(0);
      log.info({ alert: 'fcm-prune-breaker' }, 'FCM prune breaker closed: token-related answers prune registrations again');
    },
  });
  const tokens = createAccessTokens(credentials, { projectId, timeoutMs: options.fcmDeadlineMs ?? requestDeadlineMs.oauth, log });
  const sender = createFcmSender({
    projectId,
    endpoint: config.fcm.endpoint,
    tokens,
    dispatcher,
    deadlineMs,
    bodyCapBytes: defaults.fcmBodyCapBytes,
    breaker,
    now: options.now,
  });
  return {
    sender: {
      name: 'fcm',
      // Every send counts toward the volume the breaker's threshold follows, and tells it whose
      // registration an answer is about (the sender records answers by registration).
      async send(registration, priority, signal) {
        const done = breaker.sending(registration);
        try {
          return await sender.send(registration, priority, signal);
        } finally {
          done();
        }
      },
    },
    tokens,
  };
}

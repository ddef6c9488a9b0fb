/**
 * The transports of one worker process, built once at start from the configuration:
 * FCM (disabled, answering `config-error`, when there are no credentials) and UnifiedPush.
 * The send activity picks one per registration with `forRegistration` and maps its outcome
 * to the registration's fate; `close` releases the connection pools on shutdown.
 */
import { Agent } from 'undici';
import type { WorkerConfig } from '../config/index.js';
import type { Logger } from '../log.js';
import { createPruneBreaker, defaultBreaker } from './breaker.js';
import { createAccessTokens } from './fcm-auth.js';
import { createFcmTransport } from './fcm.js';
import { breakerOpen, breakerTrips } from './metrics.js';
import { observe } from './observe.js';
import { createGuardedAgent, type Resolve } from './safe-http.js';
import type { RegistrationForSend, Transport } from './types.js';
import { createUnifiedPushTransport } from './unifiedpush.js';
import { createVapidSigner } from './vapid.js';

export type { Priority, RegistrationForSend, SendOutcome, Transport, TransportName } from './types.js';

export interface TransportOptions {
  /** Total time for one UnifiedPush request (design §7: 10 s). */
  readonly unifiedPushDeadlineMs?: number;
  /** Total time for one FCM request, and for one OAuth token request. */
  readonly fcmDeadlineMs?: number;
  /** Response bytes read at most from a UnifiedPush endpoint. */
  readonly unifiedPushBodyCapBytes?: number;
  readonly breaker?: { readonly threshold?: number; readonly windowMs?: number };
  /** The clock (breaker window, VAPID expiry, Retry-After dates). */
  readonly now?: () => number;
  /** DNS for UnifiedPush host names (tests point names at chosen addresses). */
  readonly resolve?: Resolve;
}

export interface Transports {
  readonly fcm: Transport;
  readonly unifiedpush: Transport;
  forRegistration(registration: RegistrationForSend): Transport;
  close(): Promise<void>;
}

export const defaults = {
  unifiedPushDeadlineMs: 10_000,
  fcmDeadlineMs: 10_000,
  unifiedPushBodyCapBytes: 1024,
  // FCM's error answers are small JSON documents; this is room to spare.
  fcmBodyCapBytes: 64 * 1024,
} as const;

/** What the transports read of the worker's configuration. */
export type TransportConfig = Pick<WorkerConfig, 'fcm' | 'unifiedPush'>;

export function createTransports(config: TransportConfig, log: Logger, options: TransportOptions = {}): Transports {
  const transportLog = log.child({ component: 'transports' });
  const upDeadline = options.unifiedPushDeadlineMs ?? defaults.unifiedPushDeadlineMs;
  const upAgent = createGuardedAgent({ allowPrivate: config.unifiedPush.allowPrivate, timeoutMs: upDeadline, resolve: options.resolve });
  const fcmAgent = new Agent({ connect: { timeout: options.fcmDeadlineMs ?? defaults.fcmDeadlineMs } });
  const vapid = config.unifiedPush.vapid;
  const unifiedpush = createUnifiedPushTransport({
    dispatcher: upAgent,
    allowHttp: config.unifiedPush.allowHttp,
    deadlineMs: upDeadline,
    bodyCapBytes: options.unifiedPushBodyCapBytes ?? defaults.unifiedPushBodyCapBytes,
    vapid: vapid === undefined ? undefined : createVapidSigner(vapid, { now: options.now }),
    now: options.now,
  });
  const fcm = createFcm(config, transportLog, fcmAgent, options);
  const observed = { fcm: observe(fcm, transportLog), unifiedpush: observe(unifiedpush, transportLog) };
  return {
    ...observed,
    forRegistration: (registration) => observed[registration.transport],
    async close() {
      await Promise.all([upAgent.close(), fcmAgent.close()]);
    },
  };
}

function createFcm(config: TransportConfig, log: Logger, dispatcher: Agent, options: TransportOptions): Transport {
  const { credentials, projectId } = config.fcm;
  if (credentials === undefined || projectId === undefined) {
    log.info('FCM disabled');
    return {
      name: 'fcm',
      send: async () => ({ kind: 'config-error', reason: 'FCM disabled: no FCM_CREDENTIALS_JSON on this worker' }),
    };
  }
  const deadlineMs = options.fcmDeadlineMs ?? defaults.fcmDeadlineMs;
  const breaker = createPruneBreaker({
    threshold: options.breaker?.threshold ?? defaultBreaker.threshold,
    windowMs: options.breaker?.windowMs ?? defaultBreaker.windowMs,
    now: options.now,
    onOpen: (count) => {
      breakerOpen.set(1);
      breakerTrips.inc();
      log.error(
        { alert: 'fcm-prune-breaker', registrations: count },
        'FCM prune breaker OPEN: too many devices got token-related 400/403 answers at once — likely our project, credentials or payload; registrations are no longer deleted on these answers',
      );
    },
    onClose: () => {
      breakerOpen.set(0);
      log.info({ alert: 'fcm-prune-breaker' }, 'FCM prune breaker closed: token-related answers prune registrations again');
    },
  });
  return createFcmTransport({
    projectId,
    endpoint: config.fcm.endpoint,
    tokens: createAccessTokens(credentials, deadlineMs),
    dispatcher,
    deadlineMs,
    bodyCapBytes: defaults.fcmBodyCapBytes,
    breaker,
    now: options.now,
  });
}

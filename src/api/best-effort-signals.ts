/**
 * The api's signals: telling a device's workflow what just committed in PostgreSQL. PostgreSQL is the truth and
 * these are hints (the bridge's signal-with-start and the maintenance schedule heal a missed
 * one), so an unreachable Temporal must neither fail nor stall the request: each call gets a
 * short deadline, and a failure is logged (ids only) and counted.
 *
 * `pending` tells the device's workflow that a test wake was asked for (a user's request, never held).
 *
 * `registered` starts the device's workflow: a burst of registrations (an app release, phones
 * coming back after an outage) would put every new workflow's first task in front of a DM's in
 * Temporal's task queue. With `backlogMs` set they go through a pacer (src/signal-pacer.ts),
 * one user after another, and a request waits for its signal at most `deadlineMs`; one not sent
 * by then stays queued and goes out when the workers' backlog allows. `deleted` is never held:
 * a late `registered` for a device deleted meanwhile costs its workflow one look, which finds
 * the registration gone and ends.
 */
import type { Logger } from '../log.js';
import type { TemporalHandle } from '../../temporal/client.js';
import { signalDeleted, signalPending, signalRegistered, workflowTaskPending } from '../../temporal/registration-workflows.js';
import type { DeviceIdentity, DeviceToSignal, TransportName } from '../domain.js';
import { errorSummary } from '../error-summary.js';
import { PacerStoppedError, SignalPacer } from '../signal-pacer.js';
import { registrationPacers, temporalSignalFailures } from './metrics.js';
import { withTimeout } from '../with-timeout.js';

export interface RegistrationSignals {
  registered(device: DeviceIdentity, transport: TransportName): Promise<void>;
  deleted(device: DeviceIdentity): Promise<void>;
  /** A test wake was asked for: the device's workflow looks (started if missing). Never held. */
  pending(device: DeviceIdentity, transport: TransportName): Promise<void>;
  /** Drops the registrations still queued (logged once; the bridge and maintenance start their workflows). */
  stop(): void;
}

export interface SignalOptions {
  /** How long a request waits for its signal (default 3 s). */
  readonly deadlineMs?: number;
  /** The workers' backlog up to which `registered` signals are sent (`API_REGISTRATION_BACKLOG_MS`); 0: not paced. */
  readonly backlogMs: number;
  /** Registrations queued at most; beyond, a signal is dropped as failed. */
  readonly maxQueued?: number;
}

/** Signals in flight at once from one pacer. */
const pacedConcurrency = 16;
/** A paced signal holds no request: it may take what a loaded Temporal needs. */
const pacedCallDeadlineMs = 10_000;

export function createBestEffortSignals(temporal: TemporalHandle, taskQueue: string, log: Logger, options: SignalOptions): RegistrationSignals {
  const { client } = temporal;
  const deadlineMs = options.deadlineMs ?? 3_000;
  const maxQueued = options.maxQueued ?? 10_000;
  const failed = (signal: string, device: DeviceIdentity, error: unknown) => {
    temporalSignalFailures.inc({ signal });
    log.warn(
      { userId: device.userId, deviceId: device.deviceId, signal, err: errorSummary(error) },
      'could not tell Temporal; the change is committed and will be picked up later',
    );
  };
  // The gRPC deadline ends the call; the race also bounds the (lazy) connection attempt.
  const call = (what: () => Promise<void>, ms = deadlineMs) => withTimeout(temporal.withDeadline(ms, what), ms, 'Temporal did not answer');
  const send = async (signal: string, device: DeviceIdentity, what: () => Promise<void>): Promise<void> => {
    try {
      await call(what);
    } catch (error) {
      failed(signal, device, error);
    }
  };
  const register = (device: DeviceToSignal) => signalRegistered(client, taskQueue, device, device.transport);
  const pacer =
    options.backlogMs > 0
      ? new SignalPacer(
          {
            send: (device) => call(() => register(device), pacedCallDeadlineMs),
            pending: (device) => temporal.withDeadline(pacedCallDeadlineMs, () => workflowTaskPending(client, device)),
          },
          { targetDelayMs: options.backlogMs, concurrency: pacedConcurrency },
        )
      : undefined;
  const unwatch = pacer === undefined ? undefined : registrationPacers.watch(pacer);

  const registeredPaced = async (paced: SignalPacer, device: DeviceIdentity, transport: TransportName): Promise<void> => {
    if (paced.view().queued >= maxQueued) return failed('registered', device, new Error(`${maxQueued} registrations already wait for the workers`));
    const sent = paced.submit(device.userId, [{ ...device, transport }]).then(([failure]) => {
      if (failure !== undefined && !(failure instanceof PacerStoppedError)) failed('registered', device, failure);
    });
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([sent, new Promise((resolve) => (timer = setTimeout(resolve, deadlineMs)))]);
    clearTimeout(timer);
  };

  return {
    registered: (device, transport) =>
      pacer === undefined ? send('registered', device, () => register({ ...device, transport })) : registeredPaced(pacer, device, transport),
    deleted: (device) => send('deleted', device, () => signalDeleted(client, device)),
    pending: (device, transport) => send('pending', device, () => signalPending(client, taskQueue, device, transport)),
    stop() {
      if (pacer === undefined) return;
      const { queued } = pacer.view();
      pacer.stop();
      unwatch?.();
      if (queued > 0) log.warn({ queued }, 'stopping with registration signals not sent; the bridge and maintenance start their workflows');
    },
  };
}

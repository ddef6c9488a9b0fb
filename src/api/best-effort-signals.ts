/**
 * The api's signals: telling a device's workflow what just committed in PostgreSQL. PostgreSQL is
 * the truth and these are hints (maintenance heals a missed one), so an unreachable Temporal must
 * neither fail nor stall the request: each call gets a short deadline, and a failure is logged
 * (ids only) and counted.
 *
 * Two go from here, at once: `deleted`, and `pending` when the device asked for a test wake (a
 * user's own request, never held). A registration's `registered` signal-with-start is owed in the
 * signal outbox with the registration itself (registration-store.ts) and sent by the bridge's
 * signaller, paced, so a burst of registrations never holds a DM back. A `registered` that goes
 * out after the device was deleted costs its workflow one look, which finds the registration
 * gone and ends.
 */
import type { Logger } from '../observability/log.js';
import type { TemporalHandle } from '../../temporal/client.js';
import { signalDeleted, signalPending } from '../../temporal/registration-workflows.js';
import type { DeviceIdentity, TransportName } from '../../domain/vocabulary.js';
import { errorSummary } from '../observability/error-summary.js';
import { temporalSignalFailures } from './metrics.js';
import { withTimeout } from '../async/with-timeout.js';

export interface RegistrationSignals {
  deleted(device: DeviceIdentity): Promise<void>;
  /** A test wake was asked for: the device's workflow looks (started if missing). Never held. */
  pending(device: DeviceIdentity, transport: TransportName): Promise<void>;
}

export interface SignalOptions {
  /** How long a request waits for its signal (default 3 s). */
  readonly deadlineMs?: number;
}

export function createBestEffortSignals(temporal: TemporalHandle, taskQueue: string, log: Logger, options: SignalOptions = {}): RegistrationSignals {
  const deadlineMs = options.deadlineMs ?? 3_000;
  const send = async (signal: string, device: DeviceIdentity, what: () => Promise<void>): Promise<void> => {
    try {
      // The gRPC deadline ends the call; the race also bounds the (lazy) connection attempt.
      await withTimeout(temporal.withDeadline(deadlineMs, what), deadlineMs, 'Temporal did not answer');
    } catch (error) {
      temporalSignalFailures.inc({ signal });
      log.warn(
        { userId: device.userId, deviceId: device.deviceId, signal, err: errorSummary(error) },
        'could not tell Temporal; the change is committed and will be picked up later',
      );
    }
  };
  return {
    deleted: (device) => send('deleted', device, () => signalDeleted(temporal.client, device)),
    pending: (device, transport) => send('pending', device, () => signalPending(temporal.client, taskQueue, device, transport)),
  };
}

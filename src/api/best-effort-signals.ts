/**
 * The api's signals: telling a device's workflow what just committed in PostgreSQL. PostgreSQL is the truth and
 * these are hints (the bridge's signal-with-start and the maintenance schedule heal a missed
 * one), so an unreachable Temporal must neither fail nor stall the request: each call gets a
 * short deadline, and a failure is logged (ids only) and counted.
 */
import type { Logger } from '../log.js';
import type { TemporalHandle } from '../../temporal/client.js';
import { signalDeleted, signalRegistered } from '../../temporal/registration-workflows.js';
import type { DeviceIdentity, TransportName } from '../domain.js';
import { errorSummary } from '../error-summary.js';
import { temporalSignalFailures } from './metrics.js';
import { withTimeout } from '../with-timeout.js';

export interface RegistrationSignals {
  registered(device: DeviceIdentity, transport: TransportName): Promise<void>;
  deleted(device: DeviceIdentity): Promise<void>;
}

export function createBestEffortSignals(temporal: TemporalHandle, taskQueue: string, log: Logger, deadlineMs = 3_000): RegistrationSignals {
  const { client } = temporal;
  const send = async (signal: string, device: DeviceIdentity, call: () => Promise<void>): Promise<void> => {
    try {
      // The gRPC deadline ends the call; the race also bounds the (lazy) connection attempt.
      await withTimeout(temporal.withDeadline(deadlineMs, call), deadlineMs, 'Temporal did not answer');
    } catch (error) {
      temporalSignalFailures.inc({ signal });
      log.warn(
        { userId: device.userId, deviceId: device.deviceId, signal, err: errorSummary(error) },
        'could not tell Temporal; the change is committed and will be picked up later',
      );
    }
  };
  return {
    registered: (device, transport) => send('registered', device, () => signalRegistered(client, taskQueue, device, transport)),
    deleted: (device) => send('deleted', device, () => signalDeleted(client, device)),
  };
}

/**
 * Telling a device's workflow what just committed in PostgreSQL. PostgreSQL is the truth and
 * these are hints (the bridge's signal-with-start and the maintenance schedule heal a missed
 * one), so an unreachable Temporal must neither fail nor stall the request: each call gets a
 * short deadline, and a failure is logged (ids only) and counted.
 */
import type { Logger } from '../log.js';
import type { TemporalHandle } from '../../temporal/client.js';
import { announceDeleted, announceDrained, announceRegistration, type Device } from '../../temporal/registrations.js';
import type { Transport } from './registration-request.js';
import { errorSummary } from './error-summary.js';
import { temporalAnnounceFailures } from './metrics.js';

export interface Announcer {
  registered(device: Device, transport: Transport): Promise<void>;
  drained(device: Device): Promise<void>;
  deleted(device: Device): Promise<void>;
}

export function createAnnouncer(temporal: TemporalHandle, taskQueue: string, log: Logger, deadlineMs = 3_000): Announcer {
  const { client } = temporal;
  const announce = async (announcement: string, device: Device, call: () => Promise<void>): Promise<void> => {
    try {
      // The gRPC deadline ends the call; the race also bounds the (lazy) connection attempt.
      await withTimeout(temporal.withDeadline(deadlineMs, call), deadlineMs);
    } catch (error) {
      temporalAnnounceFailures.inc({ announcement });
      log.warn({ userId: device.userId, deviceId: device.deviceId, announcement, error: errorSummary(error) }, 'could not tell Temporal; the change is committed and will be picked up later');
    }
  };
  return {
    registered: (device, transport) => announce('registered', device, () => announceRegistration(client, taskQueue, device, transport)),
    drained: (device) => announce('drained', device, () => announceDrained(client, device)),
    deleted: (device) => announce('deleted', device, () => announceDeleted(client, device)),
  };
}

function withTimeout(promise: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Temporal did not answer within ${ms} ms`)), ms);
  });
  promise.catch(() => undefined); // a late failure after the timeout is already accounted for
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

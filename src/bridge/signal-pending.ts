/**
 * The bridge's signals: tells registration workflows that they have new pending rows: one signal-with-start per
 * device (a missing workflow is started), a bounded number at a time. The input carries ids
 * and the transport only — never a token, endpoint or key.
 */
import type { Client } from '@temporalio/client';
import { announcePending } from '../../temporal/registration-workflows.js';
import { settleAll } from './concurrency.js';
import { bridgeMetrics } from './metrics.js';
import type { DeviceToSignal } from './record-events.js';

export interface AnnounceTarget {
  readonly client: Client;
  readonly taskQueue: string;
  /** Signals in flight at once for one event. */
  readonly concurrency: number;
}

export class SignalsFailedError extends Error {
  constructor(
    readonly failed: number,
    readonly total: number,
    override readonly cause: unknown,
  ) {
    super(`${failed} of ${total} pending signals failed: ${cause instanceof Error ? cause.message : String(cause)}`);
    this.name = 'SignalsFailedError';
  }
}

/** Signals every device; throws `SignalsFailedError` after trying all if any failed. */
export async function announceToDevices(target: AnnounceTarget, devices: readonly DeviceToSignal[]): Promise<void> {
  const failures = await settleAll(devices, target.concurrency, async (device) => {
    await announcePending(target.client, target.taskQueue, { userId: device.userId, deviceId: device.deviceId }, device.transport);
  });
  bridgeMetrics.signals.inc({ result: 'sent' }, devices.length - failures.length);
  if (failures.length === 0) return;
  bridgeMetrics.signals.inc({ result: 'failed' }, failures.length);
  throw new SignalsFailedError(failures.length, devices.length, failures[0]);
}

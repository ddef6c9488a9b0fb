/**
 * The bridge's signals to registration workflows that they have new pending rows: one
 * signal-with-start per device (a missing workflow is started), a bounded number at a time. The
 * input carries ids and the transport only — never a token, endpoint or key. A DM's signals go
 * out here, at once, before its event is acknowledged; a server channel's are owed in the outbox
 * and sent by the signaller (signaller.ts), which names devices with `devicesToSignal` too.
 */
import type { Client } from '@temporalio/client';
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { signalPending } from '../../temporal/registration-workflows.js';
import { transportNameSchema, type DeviceToSignal } from '../../domain/vocabulary.js';
import { settleAll } from '../async/concurrency.js';
import { bridgeMetrics } from './metrics.js';

const named = z.object({ user_ids: z.array(z.string()), device_ids: z.array(z.string()), transports: z.array(transportNameSchema) });

/**
 * The devices of `registrationIds`, as they are now: read after the transaction that chose
 * them committed (a registration deleted since has nobody to signal; one re-registered on
 * the other transport is started with it). Three parallel arrays — one aggregate fills them
 * row by row, so they line up — rather than a row or a JSON object per device.
 */
export async function devicesToSignal(pool: DatabasePool, registrationIds: readonly string[]): Promise<readonly DeviceToSignal[]> {
  if (registrationIds.length === 0) return [];
  const row = await pool.one(sql.type(named)`
    SELECT COALESCE(array_agg(r.user_id::text), '{}') AS user_ids,
           COALESCE(array_agg(r.device_id), '{}') AS device_ids,
           COALESCE(array_agg(r.transport), '{}') AS transports
    FROM push_registrations r
    WHERE r.id = ANY(${sql.array(registrationIds, 'int8')})`);
  return row.user_ids.map((userId, i) => ({ userId, deviceId: row.device_ids[i]!, transport: row.transports[i]! }));
}

export interface SignalTarget {
  readonly client: Client;
  readonly taskQueue: string;
  /** Signals in flight at once for one event. */
  readonly concurrency: number;
  /** Registrations named by one read (default `namingChunk`); the next chunk is named while this one is signalled. */
  readonly namingChunk?: number;
}

/** Registrations named by one read, unless the target says otherwise. */
export const namingChunk = 1_000;

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

/**
 * Names and signals every registration's device, a chunk at a time, so that the first signals
 * leave after one small read rather than after naming the whole channel; throws
 * `SignalsFailedError` after trying all if any signal failed. Returns the devices signalled.
 */
export async function signalRegistrations(pool: DatabasePool, target: SignalTarget, registrationIds: readonly string[]): Promise<number> {
  const chunkSize = target.namingChunk ?? namingChunk;
  const name = (from: number) => {
    const named = devicesToSignal(pool, registrationIds.slice(from, from + chunkSize));
    named.catch(() => undefined); // awaited in its turn; not an unhandled rejection meanwhile
    return named;
  };
  const failures: unknown[] = [];
  let devices = 0;
  let next = name(0);
  for (let from = 0; from < registrationIds.length; from += chunkSize) {
    const chunk = await next;
    if (from + chunkSize < registrationIds.length) next = name(from + chunkSize);
    const failed = await settleAll(chunk, target.concurrency, (device) => signal(target, device));
    bridgeMetrics.signals.inc({ result: 'sent' }, chunk.length - failed.length);
    bridgeMetrics.signals.inc({ result: 'failed' }, failed.length);
    failures.push(...failed);
    devices += chunk.length;
  }
  if (failures.length === 0) return devices;
  throw new SignalsFailedError(failures.length, devices, failures[0]);
}

export async function signal(target: Pick<SignalTarget, 'client' | 'taskQueue'>, device: DeviceToSignal): Promise<void> {
  await signalPending(target.client, target.taskQueue, { userId: device.userId, deviceId: device.deviceId }, device.transport);
}

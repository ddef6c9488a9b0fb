/**
 * The worker's side of the outage detector (src/transports/outage-detector.ts), run every few
 * seconds:
 *
 * - **share**: this worker's window per origin goes to `push_transport_health` (migration
 *   000024) and the other replicas' come back, so every replica judges an origin on what all
 *   of them saw; rows of stopped workers age out and are deleted;
 * - **probe**: for each origin in outage, one device it held back is woken now and then
 *   (its back-off cleared, a `pending` signal), one the origin delivered to lately first: its
 *   send is the probe that finds the end of the outage, so nobody waits for the growing
 *   back-offs of the others, and a dead endpoint does not stand in for the origin. Once a probe
 *   is delivered, another device is woken at the next round, not a probe interval later: its
 *   delivery ends the outage (the detector admits it at once), so the devices held back are
 *   woken within seconds whatever the instance's size;
 * - **recover**: when an outage ends, every device it held back (`backoff_origin`) gets its
 *   back-off cleared and, if rows are pending, a `pending` signal — in keyset pages, at once,
 *   rather than at its own back-off or the 15-minute re-wake (the SQL: outage-recovery.ts).
 *   The same at start for the wakes our configuration held back (`misconfigured <transport>`)
 *   of every transport this worker can send with, and for FCM's when its credentials start
 *   working after failing — announced again when a wake that failed for want of a token is
 *   recorded after that (`credentialHoldRecorded`), since a recovery misses a hold not yet
 *   committed.
 *
 * Origins are logged as `transports.originLabel` shows them: self-hosted ones by tag only.
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import type { Client } from '@temporalio/client';
import { sql } from 'slonik';
import { z } from 'zod';
import { misconfiguredOrigin } from '../../domain/backoff.js';
import { settleAll } from '../async/concurrency.js';
import { signalPending } from '../../temporal/registration-workflows.js';
import type { DatabasePool } from '../db/pool.js';
import type { Logger } from '../observability/log.js';
import type { OriginKey, OriginSummary } from '../transports/outage-detector.js';
import type { Transports } from '../transports/index.js';
import { errorSummary } from '../observability/error-summary.js';
import { clearOutageBackoffs, releaseProbe, type HeldRow } from './outage-recovery.js';

export interface OutageCoordinatorOptions {
  readonly pool: DatabasePool;
  readonly transports: Pick<Transports, 'detector' | 'onOutageEnd' | 'clock' | 'configured' | 'originLabel' | 'fcmTokens'>;
  readonly temporal: Client;
  readonly taskQueue: string;
  readonly log: Logger;
  /** Identifies this worker's rows; unique per process. */
  readonly workerId?: string;
  /** How often to share, probe and recover (real time); 0: only when `round()` is called. */
  readonly intervalMs?: number;
  /** One probe per origin in outage at most this often (detector time). */
  readonly probeEveryMs?: number;
  /** The detector's clock (default: the transports', i.e. the latest workflow time seen). */
  readonly clock?: () => number;
}

export interface OutageCoordinator {
  /** One round now (tests; the loop runs by itself). */
  round(): Promise<void>;
  stop(): Promise<void>;
}

/** Rows of a worker that stopped writing are ignored after this, and deleted later. */
const staleAfterMs = 30_000;
const deleteAfterMs = 10 * 60_000;

const summaryRow = z.object({
  origin_key: z.string(),
  delivered: z.number(),
  failed: z.number(),
  last_delivered_at: z.date().nullable(),
  in_outage: z.boolean(),
});

export function startOutageCoordinator(options: OutageCoordinatorOptions): OutageCoordinator {
  const { pool, transports, log } = options;
  const detector = transports.detector;
  const label = (key: OriginKey) => transports.originLabel(key);
  const workerId = options.workerId ?? `${os.hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  const intervalMs = options.intervalMs ?? 5_000;
  const probeEveryMs = options.probeEveryMs ?? 15_000;
  const ended = new Set<OriginKey>();
  const lastProbe = new Map<OriginKey, number>();
  /** Per origin, the delivered probe a confirming probe was released for (one each). */
  const confirmed = new Map<OriginKey, string>();
  transports.onOutageEnd((key) => void ended.add(key));
  // Wakes our configuration held back, for a transport this worker can send with: the operator
  // fixed it. They go out now, not at the end of their back-offs.
  for (const transport of transports.configured) ended.add(misconfiguredOrigin(transport));
  // The same when FCM's credentials start working after failing (a metadata server that answered late).
  transports.fcmTokens?.onRecovered(() => void ended.add(misconfiguredOrigin('fcm')));

  let running: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  async function share(now: number): Promise<void> {
    const mine = [...detector.summaries(now)];
    const at = new Date(now).toISOString();
    await pool.query(sql.unsafe`
      INSERT INTO push_transport_health (origin_key, worker_id, delivered, failed, last_delivered_at, in_outage, updated_at)
      SELECT t.origin_key, ${workerId}, t.delivered, t.failed, t.last_delivered_at, t.in_outage, ${at}::timestamptz
      FROM unnest(${sql.array(
        mine.map(([key]) => key),
        'text',
      )}, ${sql.array(
        mine.map(([, s]) => s.delivered),
        'int4',
      )},
                  ${sql.array(
                    mine.map(([, s]) => s.failed),
                    'int4',
                  )},
                  ${sql.array(
                    mine.map(([, s]) => (s.lastDeliveredAt === null ? null : new Date(s.lastDeliveredAt).toISOString())),
                    'timestamptz',
                  )},
                  ${sql.array(
                    mine.map(([, s]) => s.inOutage),
                    'bool',
                  )})
        AS t(origin_key, delivered, failed, last_delivered_at, in_outage)
      ON CONFLICT (origin_key, worker_id) DO UPDATE SET
        delivered = EXCLUDED.delivered, failed = EXCLUDED.failed, last_delivered_at = EXCLUDED.last_delivered_at,
        in_outage = EXCLUDED.in_outage, updated_at = EXCLUDED.updated_at`);
    await pool.query(sql.unsafe`
      DELETE FROM push_transport_health
      WHERE (worker_id = ${workerId} AND origin_key <> ALL(${sql.array(
        mine.map(([key]) => key),
        'text',
      )}))
         OR updated_at < ${at}::timestamptz - ${deleteAfterMs} * interval '1 millisecond'`);
    const others = await pool.any(sql.type(summaryRow)`
      SELECT origin_key, sum(delivered)::int4 AS delivered, sum(failed)::int4 AS failed,
             max(last_delivered_at) AS last_delivered_at, bool_or(in_outage) AS in_outage
      FROM push_transport_health
      WHERE worker_id <> ${workerId} AND updated_at > ${at}::timestamptz - ${staleAfterMs} * interval '1 millisecond'
      GROUP BY origin_key`);
    const remote = new Map<OriginKey, OriginSummary>(
      others.map((r) => [
        r.origin_key,
        { delivered: r.delivered, failed: r.failed, lastDeliveredAt: r.last_delivered_at?.getTime() ?? null, inOutage: r.in_outage },
      ]),
    );
    detector.setRemote(remote, now);
  }

  /**
   * Wakes every device held back by the outage of `key`, a page at a time (outage-recovery.ts).
   * Returns whether it is done: a device another transaction held locked throughout (a claim
   * in flight) is still held, and the next round comes back for it.
   */
  async function recover(key: OriginKey): Promise<boolean> {
    let woken = 0;
    const { cleared, remaining } = await clearOutageBackoffs(pool, key, async (rows) => {
      woken += await signalHeld(rows);
    });
    if (cleared > 0) log.info({ outage: label(key), cleared, woken }, 'outage over: devices it held back were woken');
    if (remaining) log.debug({ outage: label(key) }, 'outage over: some devices it held back were locked; next round');
    return !remaining;
  }

  /** Lets one held-back device with rows pending try now, one that delivered recently first: its send is the origin's probe. */
  async function probe(key: OriginKey, now: number): Promise<void> {
    await signalHeld(await releaseProbe(pool, key, detector.deliveredRecently(key, now)));
  }

  async function signalHeld(rows: readonly HeldRow[]): Promise<number> {
    const due = rows.filter((r) => r.has_pending);
    const failures = await settleAll(due, 16, (r) =>
      signalPending(options.temporal, options.taskQueue, { userId: r.user_id, deviceId: r.device_id }, r.transport),
    );
    const failed = failures.length;
    // Their back-off is cleared in PostgreSQL: a device that missed its signal still wakes at
    // its workflow's own timer, at the latest the back-off it had.
    if (failed > 0) log.warn({ failed }, 'could not signal some devices after clearing their back-off');
    return due.length - failed;
  }

  async function round(): Promise<void> {
    const now = (options.clock ?? transports.clock)();
    detector.tick(now);
    try {
      await share(now);
    } catch (error) {
      log.warn({ err: errorSummary(error) }, 'could not share the outage window with the other workers');
    }
    for (const key of [...ended]) {
      // In outage again: its end will recover what it holds then.
      if (detector.inOutage(key)) {
        ended.delete(key);
        continue;
      }
      try {
        if (await recover(key)) ended.delete(key);
      } catch (error) {
        log.warn({ outage: label(key), err: errorSummary(error) }, 'could not wake the devices held back by an outage (next round)');
      }
    }
    for (const key of detector.outages()) {
      const confirming = detector.confirming(key);
      const confirm = confirming !== undefined && confirmed.get(key) !== confirming;
      if (!confirm && now - (lastProbe.get(key) ?? -Infinity) < probeEveryMs) continue;
      lastProbe.set(key, now);
      if (confirming !== undefined) confirmed.set(key, confirming);
      await probe(key, now).catch((error: unknown) => log.warn({ outage: label(key), err: errorSummary(error) }, 'could not start a probe'));
    }
    for (const key of lastProbe.keys()) if (!detector.inOutage(key)) lastProbe.delete(key);
    for (const key of confirmed.keys()) if (!detector.inOutage(key)) confirmed.delete(key);
  }

  const schedule = () => {
    if (stopped || intervalMs === 0) return;
    timer = setTimeout(() => {
      running = round().finally(() => {
        running = undefined;
        schedule();
      });
    }, intervalMs);
  };
  schedule();

  return {
    async round() {
      await running;
      await round();
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
      await pool.query(sql.unsafe`DELETE FROM push_transport_health WHERE worker_id = ${workerId}`).catch(() => undefined);
    },
  };
}

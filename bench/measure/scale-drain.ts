/**
 * The api's drain with millions of rows in push_pending: `drainPending` for devices spread over
 * the table, one after another on one connection, alternating with other devices drained by
 * the bare statements that take the same rows (no visibility re-check).
 */
import { sql } from 'slonik';
import { z } from 'zod';
import { type DatabasePool, drainPending } from '../../src/testing.js';
import type { Report, Section } from '../report.js';
import { setupProse } from '../setup-prose.js';
import { quantile } from '../stats.js';
import type { ScaleWorld } from './scale-world.js';

export async function measureDrain(pool: DatabasePool, report: Report, section: Section, world: ScaleWorld, devices: number): Promise<void> {
  // Devices spread over the table (ids in every part of the indexes), outside the measured channels.
  const start = Math.max(...world.channels.map((c) => c.members)) + 1;
  const last = world.registrations - 2 * world.due.noSession - world.channels.length - 1;
  const stepBy = Math.max(1, Math.floor((last - start) / (2 * devices)));
  const picked = Array.from({ length: 2 * devices }, (_, k) => world.userId(start + k * stepBy));
  const ours: number[] = [];
  const bare: number[] = [];
  let items = 0;
  for (const [k, userId] of picked.entries()) {
    const t = performance.now();
    if (k % 2 === 0) {
      const drained = await drainPending(pool, { userId, deviceId: 'phone' });
      ours.push(performance.now() - t);
      items += drained?.items.length ?? 0;
    } else {
      await pool.transaction(async (tx) => {
        const id = await tx.oneFirst(sql.type(z.object({ id: z.string() }))`
          UPDATE push_registrations SET wake_outstanding = false WHERE user_id = ${userId} AND device_id = 'phone' RETURNING id`);
        await tx.any(sql.unsafe`
          DELETE FROM push_pending WHERE registration_id = ${id}
          RETURNING channel_id, message_count, first_message_id, first_at, last_message_id`);
      });
      bare.push(performance.now() - t);
    }
  }
  const rows = world.pendingRows.toLocaleString('en-US');
  const refName = 'bare: the same UPDATE and DELETE … RETURNING, no visibility re-check';
  report.figure(section, {
    name: `drain with ${rows} rows in push_pending: latency p50`,
    value: quantile(ours, 0.5),
    unit: 'ms',
    reference: { name: refName, value: quantile(bare, 0.5) },
    headline: 'scale: drain',
  });
  report.figure(section, {
    name: `drain with ${rows} rows in push_pending: latency p99`,
    value: quantile(ours, 0.99),
    unit: 'ms',
    reference: { name: refName, value: quantile(bare, 0.99) },
  });
  section.setup.push(setupProse('scale-drain', { devices, items }));
}

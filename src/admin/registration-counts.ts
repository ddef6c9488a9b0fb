/** Registrations by transport, for `push-admin count`: a quick picture of an instance. */
import { sql } from 'slonik';
import { z } from 'zod';
import type { DatabasePool } from '../db/pool.js';
import { transportNameSchema } from '../../domain/vocabulary.js';

const countRow = z.object({
  transport: transportNameSchema,
  registrations: z.number(),
  encrypted: z.number(),
  wake_outstanding: z.number(),
  with_pending: z.number(),
  failing: z.number(),
});

export type TransportCount = z.infer<typeof countRow>;

export interface RegistrationCounts {
  readonly byTransport: readonly TransportCount[];
  readonly pendingRows: number;
}

export async function countRegistrations(pool: DatabasePool): Promise<RegistrationCounts> {
  const byTransport = await pool.any(sql.type(countRow)`
    SELECT r.transport,
           count(*)::int AS registrations,
           count(*) FILTER (WHERE r.up_p256dh IS NOT NULL)::int AS encrypted,
           count(*) FILTER (WHERE r.wake_outstanding)::int AS wake_outstanding,
           count(*) FILTER (WHERE EXISTS (SELECT 1 FROM push_pending p WHERE p.registration_id = r.id))::int AS with_pending,
           count(*) FILTER (WHERE r.failures > 0)::int AS failing
    FROM push_registrations r GROUP BY r.transport ORDER BY r.transport`);
  const pendingRows = await pool.oneFirst(sql.type(z.object({ count: z.number() }))`SELECT count(*)::int AS count FROM push_pending`);
  return { byTransport, pendingRows };
}

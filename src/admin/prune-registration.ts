/**
 * Prunes one registration the way `DELETE /api/push/registration` does: the row goes (its
 * pending rows cascade), then the device's workflow is told to check and end. The device can
 * register again at its next start; to keep it out, revoke its session on the host.
 */
import type { Client } from '@temporalio/client';
import { sql } from 'slonik';
import { z } from 'zod';
import type { DatabasePool } from '../db/pool.js';
import { signalDeleted } from '../../temporal/registration-workflows.js';
import { transportNameSchema, type TransportName } from '../../domain/vocabulary.js';

export interface PruneResult {
  /** Whether a registration existed and was deleted. */
  readonly deleted: boolean;
  readonly transport: TransportName | undefined;
  /** Whether the workflow was told (a Temporal outage leaves it for maintenance to heal). */
  readonly workflowTold: boolean;
  readonly workflowError: string | undefined;
}

export async function pruneRegistration(pool: DatabasePool, temporal: Client, userId: string, deviceId: string): Promise<PruneResult> {
  const transport = await pool.maybeOneFirst(sql.type(z.object({ transport: transportNameSchema }))`
    DELETE FROM push_registrations WHERE user_id = ${userId} AND device_id = ${deviceId} RETURNING transport`);
  // Told even when there was no row, as the api does: a workflow left running ends too.
  const told = await signalDeleted(temporal, { userId, deviceId }).then(
    () => ({ workflowTold: true, workflowError: undefined }),
    (error: unknown) => ({ workflowTold: false, workflowError: error instanceof Error ? error.message : String(error) }),
  );
  return { deleted: transport !== null, transport: transport ?? undefined, ...told };
}

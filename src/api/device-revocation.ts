/**
 * `DELETE /api/keys/devices/{device_id}` (docs/design.md, Device API): one of the caller's devices loses its
 * key bundle, its sessions and its push registration in one statement — one transaction — so
 * nobody ever sees a device half revoked (e.g. still woken after its keys are gone).
 */
import { sql } from 'slonik';
import { z } from 'zod';
import type { DatabasePool } from '../db/pool.js';
import type { DeviceIdentity } from '../../domain/vocabulary.js';
import { lockDevice } from './device-lock.js';

/** True when the device had anything to revoke. */
export async function revokeDevice(pool: DatabasePool, device: DeviceIdentity): Promise<boolean> {
  const { deleted } = await pool.transaction(async (tx) => {
    // A PUT in progress commits first, and its registration is deleted below (device-lock.ts).
    await lockDevice(tx, device);
    return tx.one(sql.type(z.object({ deleted: z.number().int() }))`
    WITH keys AS (
      DELETE FROM device_keys WHERE user_id = ${device.userId} AND device_id = ${device.deviceId} RETURNING 1
    ), sessions AS (
      DELETE FROM refresh_tokens WHERE user_id = ${device.userId} AND device_id = ${device.deviceId} RETURNING 1
    ), registration AS (
      DELETE FROM push_registrations WHERE user_id = ${device.userId} AND device_id = ${device.deviceId} RETURNING 1
    )
    SELECT ((SELECT count(*) FROM keys) + (SELECT count(*) FROM sessions) + (SELECT count(*) FROM registration))::int AS deleted
  `);
  });
  return deleted > 0;
}

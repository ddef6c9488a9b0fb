/**
 * Whether a device may have a registration is decided by two requests that must not overlap:
 * `PUT /api/push/registration` (only with a live session) and the device's revocation (its
 * sessions and registration go together). Each takes this lock on the device first, in its
 * transaction, so its statement after the lock sees what the other committed: a revocation
 * deletes the registration a `PUT` stored, or the `PUT` finds the sessions gone. An advisory
 * lock, because the registration may not exist yet and the sessions are the host's rows.
 * Two devices whose keys collide only wait for each other.
 */
import { sql, type DatabaseTransactionConnection } from 'slonik';
import type { DeviceIdentity } from '../../domain/vocabulary.js';

/** The first key of the two-key advisory locks: this lock's own space ("push"). */
const deviceLockSpace = 0x70757368;

export async function lockDevice(tx: DatabaseTransactionConnection, device: DeviceIdentity): Promise<void> {
  await tx.query(sql.unsafe`SELECT pg_advisory_xact_lock(${deviceLockSpace}::int4, hashtext(${device.userId} || '/' || ${device.deviceId}))`);
}

/**
 * The send activity against real PostgreSQL, at the edge the fault tests found: what it does
 * after the provider accepted the wake must not fail it, or Temporal retries the activity and
 * the device gets the wake twice.
 */
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRegistrationActivities } from '../../activities/registration.js';
import { createDatabasePool } from '../../src/db/pool.js';
import { createLogger } from '../../src/log.js';
import type { Transport } from '../../src/transports/types.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await freshDatabase();
  await db.pool.query(sql.unsafe`INSERT INTO users (id, username) VALUES (1, 'alice')`);
});
afterAll(async () => {
  await db.drop();
});

async function registration(failures: number): Promise<string> {
  return db.pool.oneFirst(sql.type(z.object({ id: z.string() }))`
    INSERT INTO push_registrations (user_id, device_id, transport, token, failures)
    VALUES (1, ${`phone-${failures}`}, 'unifiedpush', 'https://up.example/x', ${failures}) RETURNING id`);
}

function activitiesWith(pool: Parameters<typeof createRegistrationActivities>[0]['pool'], send: Transport['send']) {
  return createRegistrationActivities({
    pool,
    log: createLogger({ level: 'silent', name: 'test' }),
    coalescing: { minIntervalMs: 15_000, rewakeAfterMs: 900_000 },
    transports: { forRegistration: () => ({ name: 'unifiedpush', send }) },
  });
}

describe('sendWake after a delivery', () => {
  it('resets the failure count', async () => {
    const id = await registration(3);
    const { sendWake } = activitiesWith(db.pool, async () => ({ kind: 'delivered' }));
    expect(await sendWake({ registrationId: id, userId: '1', deviceId: 'phone-3', priority: 'normal' })).toEqual({ outcome: 'delivered' });
    expect(await db.pool.oneFirst(sql.type(z.object({ failures: z.number() }))`SELECT failures FROM push_registrations WHERE id = ${id}`)).toBe(0);
  });

  it('reports the wake delivered when PostgreSQL goes away right after the provider accepted it', async () => {
    const id = await registration(4);
    const pool = await createDatabasePool(db.url, { maximumPoolSize: 1 });
    let sent = 0;
    const { sendWake } = activitiesWith(pool, async () => {
      sent++;
      await pool.end(); // the database is gone before the bookkeeping
      return { kind: 'delivered' };
    });
    await expect(sendWake({ registrationId: id, userId: '1', deviceId: 'phone-4', priority: 'normal' })).resolves.toEqual({ outcome: 'delivered' });
    expect(sent).toBe(1);
  });
});

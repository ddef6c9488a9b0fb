/**
 * Migrations: 000022 exactly as docs/design.md, Registrations, up → down → up, idempotent, and safe when several
 * replicas run them at once.
 */
import { sql } from 'slonik';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { migrateDown, migrateUp } from '../../src/db/migrate.js';
import { serviceMigrations } from '../../src/db/migrations.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';

const all = serviceMigrations({ withHostStandIn: true });
let db: TestDatabase | undefined;
afterEach(async () => {
  await db?.drop();
  db = undefined;
});

async function tables(database: TestDatabase): Promise<string[]> {
  const rows = await database.pool.any(
    sql.type(z.object({ table_name: z.string() }))`
      SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name`,
  );
  return rows.map((r) => r.table_name);
}

async function columns(database: TestDatabase, table: string): Promise<Record<string, string>> {
  const rows = await database.pool.any(
    sql.type(z.object({ column_name: z.string(), data_type: z.string(), is_nullable: z.string() }))`
      SELECT column_name, data_type, is_nullable FROM information_schema.columns
      WHERE table_schema = 'public' AND table_name = ${table}`,
  );
  return Object.fromEntries(rows.map((r) => [r.column_name, `${r.data_type}${r.is_nullable === 'YES' ? ' null' : ''}`]));
}

describe('migrations', () => {
  it('000022 creates push_registrations and push_pending as designed and drops device_tokens', async () => {
    db = await freshDatabase({ migrated: false });
    await migrateUp(
      db.url,
      all.filter((m) => m.version <= 22),
    );
    const names = await tables(db);
    expect(names).toContain('push_registrations');
    expect(names).toContain('push_pending');
    expect(names).not.toContain('device_tokens');
    expect(await columns(db, 'push_registrations')).toEqual({
      id: 'bigint',
      user_id: 'bigint',
      device_id: 'text',
      transport: 'text',
      token: 'text',
      up_p256dh: 'bytea null',
      up_auth: 'bytea null',
      wake_outstanding: 'boolean',
      last_woken_at: 'timestamp with time zone null',
      failures: 'integer',
      created_at: 'timestamp with time zone',
      updated_at: 'timestamp with time zone',
    });
    expect(await columns(db, 'push_pending')).toEqual({
      registration_id: 'bigint',
      channel_id: 'bigint',
      message_count: 'integer',
      first_message_id: 'bigint',
      first_at: 'timestamp with time zone',
      last_message_id: 'bigint',
      is_dm: 'boolean',
    });

    // One row per (user, device); pending rows go with their registration.
    await db.pool.query(sql.unsafe`INSERT INTO users (id, username) VALUES (1, 'alice')`);
    const insert = sql.unsafe`INSERT INTO push_registrations (user_id, device_id, transport, token) VALUES (1, 'phone', 'fcm', 't') RETURNING id`;
    const { id } = (await db.pool.one(insert)) as { id: string };
    await expect(db.pool.query(insert)).rejects.toMatchObject({ constraint: 'push_registrations_user_device_key' });
    await db.pool.query(sql.unsafe`
      INSERT INTO push_pending (registration_id, channel_id, message_count, first_message_id, first_at, last_message_id, is_dm)
      VALUES (${id}, 10, 1, 100, now(), 100, true)`);
    await expect(
      db.pool.query(sql.unsafe`
        INSERT INTO push_pending (registration_id, channel_id, message_count, first_message_id, first_at, last_message_id, is_dm)
        VALUES (${id}, 10, 1, 101, now(), 101, true)`),
    ).rejects.toMatchObject({ constraint: 'push_pending_pkey' });
    await db.pool.query(sql.unsafe`DELETE FROM push_registrations WHERE id = ${id}`);
    expect(await db.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM push_pending`)).toBe(0);
    // Keys: both or neither, UnifiedPush only, exact sizes.
    await expect(
      db.pool.query(
        sql.unsafe`INSERT INTO push_registrations (user_id, device_id, transport, token, up_p256dh) VALUES (1, 'x', 'unifiedpush', 'u', ${sql.binary(Buffer.alloc(65))})`,
      ),
    ).rejects.toMatchObject({ constraint: 'push_registrations_keys_together' });
    await expect(
      db.pool.query(
        sql.unsafe`INSERT INTO push_registrations (user_id, device_id, transport, token, up_p256dh, up_auth) VALUES (1, 'x', 'fcm', 'u', ${sql.binary(Buffer.alloc(65))}, ${sql.binary(Buffer.alloc(16))})`,
      ),
    ).rejects.toMatchObject({ constraint: 'push_registrations_keys_unifiedpush_only' });
  });

  it('goes up, all the way down, and up again to the same schema', async () => {
    db = await freshDatabase({ migrated: false });
    const first = await migrateUp(db.url, all);
    expect(first.applied).toEqual([
      '000001_host_standin',
      '000022_push_notifications',
      '000023_push_bookkeeping',
      '000024_push_delivery_control',
      '000025_maintenance_cursors_rate_limit',
      '000026_push_delivery_state',
      '000027_outage_recovery_keyset',
      '000028_push_wake_priority',
      '000029_push_schema_converged',
      '000030_signal_outbox',
      '000031_push_delivery_receipts',
      '000032_push_pending_trace',
      '000033_push_recording_progress',
    ]);
    const schema = { tables: await tables(db), pending: await columns(db, 'push_pending') };

    const down = await migrateDown(db.url, all, 12);
    expect(down).toMatchObject({
      from: 33,
      to: 1,
      applied: [
        '000033_push_recording_progress',
        '000032_push_pending_trace',
        '000031_push_delivery_receipts',
        '000030_signal_outbox',
        '000029_push_schema_converged',
        '000028_push_wake_priority',
        '000027_outage_recovery_keyset',
        '000026_push_delivery_state',
        '000025_maintenance_cursors_rate_limit',
        '000024_push_delivery_control',
        '000023_push_bookkeeping',
        '000022_push_notifications',
      ],
    });
    const afterDown = await tables(db);
    expect(afterDown).toContain('device_tokens');
    expect(afterDown).not.toContain('push_registrations');
    expect(afterDown).not.toContain('push_pending');

    const again = await migrateUp(db.url, all);
    expect(again.applied).toEqual([
      '000022_push_notifications',
      '000023_push_bookkeeping',
      '000024_push_delivery_control',
      '000025_maintenance_cursors_rate_limit',
      '000026_push_delivery_state',
      '000027_outage_recovery_keyset',
      '000028_push_wake_priority',
      '000029_push_schema_converged',
      '000030_signal_outbox',
      '000031_push_delivery_receipts',
      '000032_push_pending_trace',
      '000033_push_recording_progress',
    ]);
    expect({ tables: await tables(db), pending: await columns(db, 'push_pending') }).toEqual(schema);
  });

  it('is idempotent, and several replicas migrating at once apply each migration once', async () => {
    db = await freshDatabase({ migrated: false });
    const results = await Promise.all(Array.from({ length: 4 }, () => migrateUp(db!.url, all)));
    const applied = results.flatMap((r) => r.applied);
    expect(applied.sort()).toEqual([
      '000001_host_standin',
      '000022_push_notifications',
      '000023_push_bookkeeping',
      '000024_push_delivery_control',
      '000025_maintenance_cursors_rate_limit',
      '000026_push_delivery_state',
      '000027_outage_recovery_keyset',
      '000028_push_wake_priority',
      '000029_push_schema_converged',
      '000030_signal_outbox',
      '000031_push_delivery_receipts',
      '000032_push_pending_trace',
      '000033_push_recording_progress',
    ]);
    expect(results.every((r) => r.to === 33)).toBe(true);
    expect((await migrateUp(db.url, all)).applied).toEqual([]);
    expect(await db.pool.any(sql.unsafe`SELECT version::int, dirty FROM schema_migrations`)).toEqual([{ version: 33, dirty: false }]);
  });

  it('leaves the previous version in place when a migration fails', async () => {
    db = await freshDatabase({ migrated: false });
    const broken = [
      ...all.filter((m) => m.version <= 22),
      { version: 23, name: 'broken', up: 'CREATE TABLE ok_part (x int); SELECT nope FROM nowhere;', down: undefined },
    ];
    await expect(migrateUp(db.url, broken)).rejects.toThrow(/nowhere/);
    expect(await tables(db)).not.toContain('ok_part');
    expect(await db.pool.oneFirst(sql.unsafe`SELECT version::int FROM schema_migrations`)).toBe(22);
  });
});

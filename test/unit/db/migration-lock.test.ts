/**
 * golang-migrate's advisory lock id (database.GenerateAdvisoryLockId), on values read from the
 * server's statement log while golang-migrate v4.20.1 ran: its CLI, given
 * `postgres://…/bars_dbg`, locked 4094057875 — the URL's path `/bars_dbg`, not `bars_dbg`.
 */
import { describe, expect, it } from 'vitest';
import { golangMigrateLockId, golangMigrateLockIds } from '../../../src/db/migrate.js';

describe('golang-migrate lock id', () => {
  it('is the CRC-32 of schema, table and database, times its salt, as an unsigned 32-bit integer', () => {
    expect(golangMigrateLockId('/bars_dbg', 'public')).toBe(4_094_057_875);
    expect(golangMigrateLockId('bars_dbg', 'public')).toBe(1_225_025_402);
    expect(golangMigrateLockId('/bars_dbg', 'public', 'schema_migrations')).toBe(4_094_057_875);
  });

  it("takes the CLI's form first, then the embedded library's", () => {
    expect(golangMigrateLockIds('bars_dbg', 'public')).toEqual([4_094_057_875, 1_225_025_402]);
  });
});

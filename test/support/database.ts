/** A fresh database per test file, copied from the migrated template (fast: no migrations). */
import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { sql } from 'slonik';
import { createDatabasePool, type DatabasePool } from '../../src/db/pool.js';
import { ensureDatabase } from '../../devstack/services.js';
import './provided.js';

export interface TestDatabase {
  readonly name: string;
  readonly url: string;
  readonly pool: DatabasePool;
  drop(): Promise<void>;
}

export function databaseUrl(name: string): string {
  const url = new URL(inject('postgresAdminUrl'));
  url.pathname = `/${name}`;
  return url.toString();
}

export async function freshDatabase(options: { migrated?: boolean } = {}): Promise<TestDatabase> {
  const name = `test_${randomBytes(6).toString('hex')}`;
  await ensureDatabase(inject('postgresAdminUrl'), name, options.migrated === false ? undefined : inject('templateDatabase'));
  const url = databaseUrl(name);
  const pool = await createDatabasePool(url, { maximumPoolSize: 20 });
  return {
    name,
    url,
    pool,
    async drop() {
      await pool.end();
      const admin = await createDatabasePool(inject('postgresAdminUrl'), { maximumPoolSize: 1 });
      try {
        await admin.query(sql.unsafe`DROP DATABASE IF EXISTS ${sql.identifier([name])} WITH (FORCE)`);
      } finally {
        await admin.end();
      }
    },
  };
}

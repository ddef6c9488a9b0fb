/** The readiness check of PostgreSQL: a trivial query, failing with a secret-free reason. */
import { sql } from 'slonik';
import { describeDatabaseFailure } from './describe-failure.js';
import type { DatabasePool } from './pool.js';

export async function checkDatabase(pool: DatabasePool): Promise<void> {
  try {
    await pool.query(sql.unsafe`SELECT 1`);
  } catch (error) {
    throw new Error(describeDatabaseFailure(error).reason, { cause: error });
  }
}

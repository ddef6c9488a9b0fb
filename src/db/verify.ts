/**
 * Opening the database at start: the pool, then a first query. Settings that cannot work (a
 * wrong CA, refused credentials) stop the process with one line saying so, instead of running
 * "not ready" forever; a database that is down when the pool opens stops it too (slonik opens
 * a connection to create the pool; the orchestrator restarts us), and one that goes away after
 * is waited for (readiness says so meanwhile).
 */
import { sql } from 'slonik';
import type { Logger } from '../observability/log.js';
import { StartupError } from '../process/startup-error.js';
import { describeDatabaseFailure } from './describe-failure.js';
import { createDatabasePool, type DatabasePool, type PoolOptions } from './pool.js';

export async function openDatabase(databaseUrl: string, log: Logger, options: PoolOptions = {}): Promise<DatabasePool> {
  let pool: DatabasePool;
  try {
    pool = await createDatabasePool(databaseUrl, options);
  } catch (error) {
    throw new StartupError(describeDatabaseFailure(error).reason);
  }
  try {
    await pool.query(sql.unsafe`SELECT 1`);
  } catch (error) {
    const failure = describeDatabaseFailure(error);
    if (failure.permanent) {
      await pool.end();
      throw new StartupError(failure.reason);
    }
    log.warn({ reason: failure.reason }, 'PostgreSQL not reachable at start; waiting for it (not ready meanwhile)');
  }
  return pool;
}

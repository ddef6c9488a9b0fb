/**
 * A first query at start: a process whose database settings cannot work (a wrong CA, refused
 * credentials) stops with one line saying so, instead of running "not ready" forever; a
 * database that is merely down is waited for (readiness says so meanwhile).
 */
import { sql } from 'slonik';
import type { Logger } from '../log.js';
import { StartupError } from '../startup-error.js';
import { describeDatabaseFailure } from './describe-failure.js';
import type { DatabasePool } from './pool.js';

export async function verifyDatabase(pool: DatabasePool, log: Logger): Promise<void> {
  try {
    await pool.query(sql.unsafe`SELECT 1`);
  } catch (error) {
    const failure = describeDatabaseFailure(error);
    if (failure.permanent) throw new StartupError(failure.reason);
    log.warn({ reason: failure.reason }, 'PostgreSQL not reachable at start; waiting for it (not ready meanwhile)');
  }
}

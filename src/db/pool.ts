/**
 * The PostgreSQL pool (slonik). Ids are 64-bit snowflakes: `int8` stays a decimal string
 * (JSON carries them as strings, and a JS number would lose precision); `timestamptz`
 * becomes a `Date`. TLS settings come from the URL (see connection.ts).
 */
import { createPool, type DatabasePool } from 'slonik';
import { postgresConnection } from './connection.js';

export type { DatabasePool } from 'slonik';

export interface PoolOptions {
  readonly maximumPoolSize?: number;
  /** Per-statement limit; a runaway query must not hold a connection forever. */
  readonly statementTimeoutMs?: number;
  /**
   * How often a transaction that PostgreSQL rolled back as a deadlock or serialization failure
   * is run again (slonik's default: 5). Tests set 0 to see whether one happened at all.
   */
  readonly transactionRetryLimit?: number;
}

export async function createDatabasePool(databaseUrl: string, options: PoolOptions = {}): Promise<DatabasePool> {
  const { url, ssl } = postgresConnection(databaseUrl);
  return createPool(url, {
    ...(ssl === false ? {} : { ssl }),
    maximumPoolSize: options.maximumPoolSize ?? 10,
    statementTimeout: options.statementTimeoutMs ?? 30_000,
    idleInTransactionSessionTimeout: 60_000,
    ...(options.transactionRetryLimit === undefined ? {} : { transactionRetryLimit: options.transactionRetryLimit }),
    connectionTimeout: 5_000,
    typeParsers: [
      { name: 'int8', parse: (value: string) => value },
      { name: 'timestamptz', parse: (value: string) => new Date(value) },
    ],
  });
}

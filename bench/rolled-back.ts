/**
 * Work in a transaction that is then rolled back: a reference statement or an EXPLAIN ANALYZE
 * that writes runs on the real rows and leaves them as they were for what is measured next.
 */
import type { DatabasePool, DatabaseTransactionConnection } from 'slonik';

class Rollback extends Error {
  constructor() {
    super('rollback');
  }
}

/** `work`'s result; every write it made is rolled back. Its own errors are thrown as they are. */
export async function inRolledBackTransaction<T>(pool: DatabasePool, work: (tx: DatabaseTransactionConnection) => Promise<T>): Promise<T> {
  let result: { readonly value: T } | undefined;
  await pool
    .transaction(async (tx) => {
      result = { value: await work(tx) };
      throw new Rollback();
    })
    .catch((error: unknown) => {
      if (!(error instanceof Rollback)) throw error;
    });
  return result!.value;
}

/**
 * The signal outbox (`push_signal_outbox`, migration 000030): the signals owed to registration
 * workflows that can wait — a server channel's `pending` signals (the bridge), a registration's
 * `registered` (the api). What must stay true:
 *
 * - **Owed before answered.** A row is written in the same transaction as what its signals tell
 *   (the pending rows, the registration): once that commits, the event may be acknowledged and
 *   the `PUT` answered, and a process that dies then loses nothing.
 * - **Sent by one signaller at a time** (src/bridge/signaller.ts): a row is taken by the current
 *   signaller's term (`claimed_by`), advanced as its signals are accepted (`sent`, leading ids)
 *   and deleted once all were. A new term releases what older terms took, and starts each row
 *   where `sent` says: a signal may go out twice (it costs its workflow one more look), never
 *   not at all.
 * - **Set-based and small.** One row per recorded batch, however many registrations it names;
 *   every statement here touches rows by primary key or through the partial index of rows not
 *   taken yet.
 */
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';

export type OwedSignal = 'pending' | 'registered';

export interface OwedSignals {
  readonly signal: OwedSignal;
  /** Whose turn it is (`serverTurn`, `userTurn`). */
  readonly turnKey: string;
  readonly registrationIds: readonly string[];
}

/** The turn of a chat server's channel messages. */
export const serverTurn = (serverId: string) => `server:${serverId}`;
/** The turn of a user's registrations. */
export const userTurn = (userId: string) => `user:${userId}`;

/** Records owed signals inside the caller's transaction. Nothing is written for no registrations. */
export async function oweSignals(tx: CommonQueryMethods, owed: OwedSignals): Promise<void> {
  if (owed.registrationIds.length === 0) return;
  await tx.query(sql.unsafe`
    INSERT INTO push_signal_outbox (signal, turn_key, registration_ids)
    VALUES (${owed.signal}, ${owed.turnKey}, ${sql.array(owed.registrationIds, 'int8')})`);
}

const claimedRow = z.object({
  id: z.string(),
  signal: z.enum(['pending', 'registered']),
  turn_key: z.string(),
  registration_ids: z.array(z.string()),
  sent: z.number(),
  created_at: z.date(),
});
export type ClaimedRow = z.infer<typeof claimedRow>;

/**
 * Takes for `term` the oldest rows nobody took yet: at most `rows` of them, and no more once
 * the registrations they name reach `registrations` (the first row is taken whatever its size).
 * `smallOnly`: only rows with at most that many signals left (the signaller's share for small
 * messages when large ones fill its budget); the large rows before them are passed over, read
 * through the unclaimed rows' index.
 */
export async function claimOwedSignals(
  db: CommonQueryMethods,
  term: string,
  limits: { readonly rows: number; readonly registrations: number; readonly smallOnly?: number },
): Promise<readonly ClaimedRow[]> {
  const small = limits.smallOnly === undefined ? sql.fragment`` : sql.fragment`AND cardinality(registration_ids) - sent <= ${limits.smallOnly}`;
  return db.any(sql.type(claimedRow)`
    UPDATE push_signal_outbox o SET claimed_by = ${term}
    FROM (
      SELECT id FROM (
        SELECT id, sum(cardinality(registration_ids) - sent) OVER (ORDER BY id) - (cardinality(registration_ids) - sent) AS before
        FROM (
          SELECT id, registration_ids, sent FROM push_signal_outbox
          WHERE claimed_by IS NULL ${small} ORDER BY id LIMIT ${limits.rows} FOR UPDATE SKIP LOCKED
        ) free
      ) counted
      WHERE before < ${limits.registrations}
    ) taken
    WHERE o.id = taken.id
    RETURNING o.id, o.signal, o.turn_key, o.registration_ids::text[] AS registration_ids, o.sent, o.created_at`);
}

/** Gives back the rows `term` took and did not finish (its signaller stops): the next term takes them at once. */
export async function releaseTerm(db: CommonQueryMethods, term: string): Promise<void> {
  await db.query(sql.unsafe`UPDATE push_signal_outbox SET claimed_by = NULL WHERE claimed_by = ${term}`);
}

/**
 * Gives back the rows taken by other terms than `term` (their signaller is gone); returns how
 * many. A scan of the outbox: run when a term begins, and a few times soon after.
 */
export async function releaseOtherTerms(db: CommonQueryMethods, term: string): Promise<number> {
  const result = await db.query(sql.unsafe`
    UPDATE push_signal_outbox SET claimed_by = NULL WHERE claimed_by IS NOT NULL AND claimed_by <> ${term}`);
  return result.rowCount;
}

/** Advances each row's `sent` (never backwards) and deletes the rows whose every signal was accepted. */
export async function settleOwedSignals(
  db: CommonQueryMethods,
  progress: readonly { readonly id: string; readonly sent: number }[],
  finished: readonly string[],
): Promise<void> {
  if (progress.length > 0) {
    await db.query(sql.unsafe`
      UPDATE push_signal_outbox o SET sent = GREATEST(o.sent, p.sent)
      FROM unnest(${sql.array(
        progress.map((p) => p.id),
        'int8',
      )}, ${sql.array(
        progress.map((p) => p.sent),
        'int4',
      )}) AS p(id, sent)
      WHERE o.id = p.id`);
  }
  if (finished.length > 0) await db.query(sql.unsafe`DELETE FROM push_signal_outbox WHERE id = ANY(${sql.array(finished, 'int8')})`);
}

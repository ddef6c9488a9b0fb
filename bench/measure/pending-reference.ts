/**
 * The bridge benchmarks' reference and set-up, shared by the bridge-SQL and scale sections: the
 * bare `INSERT … SELECT` of the rows the bridge writes, and clearing a channel's rows between
 * rounds.
 */
import { sql, type DatabasePool } from 'slonik';
import { devicesToSignal, namingChunk } from '../../src/testing.js';
import { nextMessageId } from '../seed.js';

/** Names every device of `registrationIds` as the bridge does after its commit (`namingChunk` per read), one read after the other, without signalling; returns how many. */
export async function nameDevices(pool: DatabasePool, registrationIds: readonly string[]): Promise<number> {
  let named = 0;
  for (let from = 0; from < registrationIds.length; from += namingChunk) {
    named += (await devicesToSignal(pool, registrationIds.slice(from, from + namingChunk))).length;
  }
  return named;
}

/**
 * A statement in its own transaction under the bridge's settings (JIT off, as in
 * `recordChannelEvents`): the references and the parts are compared like for like.
 */
export function withoutJit(pool: DatabasePool, statement: ReturnType<typeof sql.unsafe>) {
  return pool.transaction(async (tx) => {
    await tx.query(sql.unsafe`SET LOCAL jit = off`);
    return tx.query(statement);
  });
}

/** The reference: the bare `INSERT … SELECT` of the same rows (`conflict`: as an upsert). */
export function bareInsert(pool: DatabasePool, channelId: string, registrationIds: ReturnType<typeof sql.array>, conflict: boolean) {
  const m = nextMessageId();
  const onConflict = conflict
    ? sql.fragment`ON CONFLICT (registration_id, channel_id) DO UPDATE SET message_count = p.message_count + 1, last_message_id = EXCLUDED.last_message_id, last_at = now()`
    : sql.fragment``;
  return withoutJit(
    pool,
    sql.unsafe`
      INSERT INTO push_pending AS p (registration_id, channel_id, message_count, first_message_id, first_at, last_message_id, is_dm, last_at)
      SELECT id, ${channelId}, 1, ${m}, now(), ${m}, false, now() FROM unnest(${registrationIds}) AS id ORDER BY id
      ${onConflict}`,
  );
}

/** Removes the channel's pending rows and vacuums, so that every round writes into the same table. */
export async function clearChannel(pool: DatabasePool, channelId: string): Promise<void> {
  await pool.query(sql.unsafe`DELETE FROM push_pending WHERE channel_id = ${channelId}`);
  await pool.query(sql.unsafe`VACUUM ANALYZE push_pending`);
}

/**
 * Records MESSAGE_CREATE events of one channel — one, or the several that were in flight
 * together — each exactly once:
 *
 * 1. the channel must exist (`channels` also says whether it is a DM — never the event);
 * 2. the message ids go into the `push_processed_events` ledger; an id already there (a
 *    redelivery, or the host publishing twice) is not counted again;
 * 3. the new events upsert `push_pending` for every registration of every recipient — count +
 *    the recipient's share of the events (an author is not woken by their own message), the
 *    earliest first message, the greatest last one — and report the rows they created: those
 *    registrations get a `pending` signal. A device that already has a row for the channel was
 *    already signalled and costs nothing;
 * 4. for the repeated events, the rows they created and still own (`first_message_id` = their
 *    id) are reported too: their signal may have been lost with the first delivery.
 *
 * **Head and tail.** A message to a large channel would keep its first wake waiting for every
 * recipient's row (a tenth of a second at 10,000). So steps 1–4 run in a short head transaction
 * that writes the rows of the first `headRegistrations` recipients by registration id; a message
 * with more is marked in the ledger with the last id written (`recorded_through`), and a tail
 * transaction writes the rest and clears the mark. The head's signals are owed (and the
 * signaller told) as soon as it commits. The event is acknowledged after the tail: a delivery
 * that dies between the two leaves the mark, and the redelivery — a repeat to step 2 — finds it
 * and writes the tail, from that id on. Nobody is counted twice or left out.
 *
 * For a server channel, the registrations to signal are owed in the signal outbox in the same
 * transaction as their rows (src/db/signal-outbox.ts): once it commits the event may be acknowledged, and the
 * signaller sends them, paced. A DM's are returned, to be signalled at once.
 *
 * The transaction answers with registration ids only: naming their devices (signal-pending.ts)
 * is a read that needs no lock, so it runs after the commit and the rows' locks are not held
 * meanwhile — for a first message to a large channel that is a fifth of the transaction.
 *
 * Concurrency: the bridge records one batch per channel at a time per replica; two replicas may
 * record one each, for events in either order. The upsert keeps min/max, so order
 * does not matter, and it writes rows in registration-id order, so two upserts wait for each
 * other rather than deadlock. Two copies of one event serialize on the ledger's primary key —
 * the second waits for the first's head to commit (then counts nothing) or roll back (then
 * counts) — and, for a tail, on the ledger row's lock (`recordTail`).
 *
 * Registrations are deleted all day (logout, revocation, pruning) while this runs. The upsert
 * locks each recipient's registration FOR KEY SHARE, in id order, before writing its row: one
 * deleted meanwhile is skipped, never a foreign-key failure of the whole channel's events. So
 * every pending row this transaction holds has its registration locked too: a delete waits for
 * the commit, and the sweeps' `FOR UPDATE SKIP LOCKED` passes such a registration by instead of
 * waiting on its pending rows' cascade — nothing the bridge waits for ever waits for the bridge.
 */
import { sql, type DatabasePool, type DatabaseTransactionConnection, type FragmentSqlToken } from 'slonik';
import { z } from 'zod';
import type { MessageEvent } from './event.js';
import { oweSignals, serverTurn } from '../db/signal-outbox.js';
import { channelRecipients } from './recipients.js';

export type EventRecord = 'counted' | 'duplicate' | 'unknown_channel';

export interface RecordedEvents {
  /** Per event, in the order given. */
  readonly records: readonly EventRecord[];
  /** Registrations whose devices get a `pending` signal, each once: a DM's to signal now, a server channel's owed in the outbox. */
  readonly registrationsToSignal: readonly string[];
  readonly rowsCreated: number;
  readonly rowsUpdated: number;
  /** The channel's server; null for a DM (and for an unknown channel). */
  readonly serverId: string | null;
}

/**
 * Recipients' registrations whose rows the head writes; a message to more is finished by a tail.
 * Small enough that the head commits in milliseconds whatever the channel's size, large enough
 * that the signaller has the first wakes' worth to send while the tail writes the rest.
 */
export const headRegistrations = 256;

/**
 * `events` must all belong to `channelId`. `traceparent`: the W3C trace context of the span
 * recording them (src/bridge/tracing.ts), kept on the rows they create (migration 000032).
 * `owed`: told when a server channel's signals were just owed (after the head, and after the
 * tail), so that the signaller starts on the head's while the tail is written.
 */
export async function recordChannelEvents(
  pool: DatabasePool,
  channelId: string,
  events: readonly MessageEvent[],
  traceparent?: string,
  owed?: () => void,
): Promise<RecordedEvents> {
  const head = await pool.transaction((tx) => recordHead(tx, channelId, events, traceparent));
  if (head === null)
    return { records: events.map(() => 'unknown_channel' as const), registrationsToSignal: [], rowsCreated: 0, rowsUpdated: 0, serverId: null };
  const { channel } = head;
  if (channel.server_id !== null && head.written.toSignal.length > 0) owed?.();
  const unfinished = firstOfEach(events.filter((e) => head.unfinished.has(e.messageId)));
  const tail = unfinished.length > 0 ? await pool.transaction((tx) => recordTail(tx, channel, unfinished, traceparent)) : nothingWritten;
  if (channel.server_id !== null && tail.toSignal.length > 0) owed?.();
  return {
    records: head.records,
    registrationsToSignal: [...new Set([...head.written.toSignal, ...tail.toSignal])],
    rowsCreated: head.written.created + tail.created,
    rowsUpdated: head.written.updated + tail.updated,
    serverId: channel.server_id,
  };
}

/** What one transaction wrote, and whom it says to signal. */
interface Written {
  readonly toSignal: readonly string[];
  readonly created: number;
  readonly updated: number;
}
const nothingWritten: Written = { toSignal: [], created: 0, updated: 0 };

interface Head {
  readonly channel: ChannelRow;
  readonly records: readonly EventRecord[];
  readonly written: Written;
  /** Messages whose rows are not all written yet: the tail's. */
  readonly unfinished: ReadonlySet<string>;
}

/**
 * The first transaction: the channel, the ledger, the rows of the first `headRegistrations`
 * recipients by registration id and their owed signals. A message with more recipients is left
 * marked in the ledger (`recorded_through`, migration 000033) for the tail; so is one whose
 * earlier delivery stopped between its head and its tail (found here as a repeat).
 */
async function recordHead(
  tx: DatabaseTransactionConnection,
  channelId: string,
  events: readonly MessageEvent[],
  traceparent: string | undefined,
): Promise<Head | null> {
  // No JIT here: a message to a large channel is planned past PostgreSQL's JIT thresholds, and
  // the compilation — paid again for every message — costs more than it saves (docs/benchmarks.md).
  await tx.query(sql.unsafe`SET LOCAL jit = off`);
  const channel = await tx.maybeOne(sql.type(channelRow)`SELECT id, server_id FROM channels WHERE id = ${channelId}`);
  if (channel === null) return null;

  const newIds = new Set(await claimInLedger(tx, events));
  const counted = new Set<string>();
  const records = events.map((e): EventRecord => {
    if (!newIds.has(e.messageId) || counted.has(e.messageId)) return 'duplicate'; // a second copy in one batch counts once too
    counted.add(e.messageId);
    return 'counted';
  });
  const fresh = events.filter((_, i) => records[i] === 'counted');
  const repeatedIds = [...new Set(events.filter((e) => !newIds.has(e.messageId)).map((e) => e.messageId))];

  const upserted = fresh.length > 0 ? await tx.one(pendingUpsert(channel, fresh, traceparent, { first: headRegistrations })) : null;
  const unfinished = new Set<string>();
  if (upserted !== null && upserted.more_after !== null) {
    await markRecordedThrough(tx, [...counted], upserted.more_after);
    for (const id of counted) unfinished.add(id);
  }
  if (repeatedIds.length > 0) for (const id of await leftBetweenHeadAndTail(tx, repeatedIds)) unfinished.add(id);
  const owned = repeatedIds.length > 0 ? await rowsOwnedBy(tx, channel, repeatedIds) : [];

  const toSignal = [...new Set([...(upserted?.created ?? []), ...owned])];
  if (channel.server_id !== null) await oweSignals(tx, { signal: 'pending', turnKey: serverTurn(channel.server_id), registrationIds: toSignal });
  return { channel, records, written: { toSignal, created: upserted?.created.length ?? 0, updated: upserted?.updated ?? 0 }, unfinished };
}

/**
 * The second transaction: the rows of every recipient past the head's last, for the messages
 * still marked in the ledger. Their ledger rows are locked first (in id order) and re-read: of
 * two copies of one event recorded at once (a redelivery meeting the first delivery), whichever
 * tail locks first writes the rest, and the other finds the mark gone and writes nothing.
 */
async function recordTail(
  tx: DatabaseTransactionConnection,
  channel: ChannelRow,
  events: readonly MessageEvent[],
  traceparent: string | undefined,
): Promise<Written> {
  await tx.query(sql.unsafe`SET LOCAL jit = off`);
  const marks = await tx.any(sql.type(recordedThrough)`
    SELECT message_id, recorded_through FROM push_processed_events
    WHERE message_id = ANY(${sql.array(
      events.map((e) => e.messageId),
      'int8',
    )}) AND recorded_through IS NOT NULL
    ORDER BY message_id
    FOR UPDATE`);
  const toSignal: string[] = [];
  let updated = 0;
  // The messages of one batch share their head, hence their mark: one statement in the usual case.
  for (const through of new Set(marks.map((m) => m.recorded_through))) {
    const ids = new Set(marks.filter((m) => m.recorded_through === through).map((m) => m.message_id));
    const upserted = await tx.one(
      pendingUpsert(
        channel,
        events.filter((e) => ids.has(e.messageId)),
        traceparent,
        { after: through },
      ),
    );
    toSignal.push(...upserted.created);
    updated += upserted.updated;
  }
  if (marks.length > 0)
    await markRecordedThrough(
      tx,
      marks.map((m) => m.message_id),
      null,
    );
  if (channel.server_id !== null) await oweSignals(tx, { signal: 'pending', turnKey: serverTurn(channel.server_id), registrationIds: toSignal });
  return { toSignal, created: toSignal.length, updated };
}

const recordedThrough = z.object({ message_id: z.string(), recorded_through: z.string() });

/** One event per message id, the first given. */
function firstOfEach(events: readonly MessageEvent[]): readonly MessageEvent[] {
  const byId = new Map<string, MessageEvent>();
  for (const e of events) if (!byId.has(e.messageId)) byId.set(e.messageId, e);
  return [...byId.values()];
}

/** Marks messages as written up to registration `through` (null: all written). */
async function markRecordedThrough(tx: DatabaseTransactionConnection, messageIds: readonly string[], through: string | null): Promise<void> {
  await tx.query(sql.unsafe`
    UPDATE push_processed_events SET recorded_through = ${through}
    WHERE message_id = ANY(${sql.array(messageIds, 'int8')})`);
}

/** Of messages already in the ledger, those whose tail is still to be written. */
async function leftBetweenHeadAndTail(tx: DatabaseTransactionConnection, messageIds: readonly string[]): Promise<readonly string[]> {
  return tx.anyFirst(sql.type(z.object({ message_id: z.string() }))`
    SELECT message_id FROM push_processed_events
    WHERE message_id = ANY(${sql.array(messageIds, 'int8')}) AND recorded_through IS NOT NULL`);
}

/** The ids this transaction entered into the ledger (the others were there already). */
async function claimInLedger(tx: DatabaseTransactionConnection, events: readonly MessageEvent[]): Promise<readonly string[]> {
  const ids = [...new Set(events.map((e) => e.messageId))];
  // In id order: two transactions claiming overlapping ids then wait for each other, never deadlock.
  return tx.anyFirst(sql.type(z.object({ message_id: z.string() }))`
    INSERT INTO push_processed_events (message_id)
    SELECT id FROM unnest(${sql.array(ids, 'int8')}) AS id ORDER BY id
    ON CONFLICT (message_id) DO NOTHING
    RETURNING message_id`);
}

const channelRow = z.object({ id: z.string(), server_id: z.string().nullable() });
/** A channel as the transaction read it: its id and its server (null for a DM). */
export type ChannelRow = z.infer<typeof channelRow>;

const upserted = z.object({
  updated: z.number(),
  created: z.array(z.string()),
  /** A head's last registration id when recipients past it remain (their rows are the tail's); else null. */
  more_after: z.string().nullable(),
});

/**
 * Which recipients' registrations a statement writes, in id order: the `first` ones (the head),
 * or every one past `after` (the tail); neither: all.
 */
export interface RecipientRange {
  readonly first?: number;
  readonly after?: string;
}

/**
 * One statement, linear in the recipients: the batch is summed up once (`whole`), and
 * separately for each of its authors (`authors`: the messages they did not write), so a
 * recipient's share is a lookup, not a join of recipients × events. It answers with the
 * number of rows updated and the ids of the registrations whose rows it created. (Exported
 * for the benchmark's EXPLAIN ANALYZE.)
 */
export function pendingUpsert(channel: ChannelRow, events: readonly MessageEvent[], traceparent?: string, range: RecipientRange = {}) {
  const recipients = registeredRecipients(channel, range);
  return sql.type(upserted)`
    WITH batch AS (
      SELECT * FROM unnest(
        ${sql.array(
          events.map((e) => e.messageId),
          'int8',
        )},
        ${sql.array(
          events.map((e) => e.authorId),
          'int8',
        )},
        ${sql.array(
          events.map((e) => e.createdAt.toISOString()),
          'timestamptz',
        )}
      ) AS b(message_id, author_id, created_at)
    ),
    whole AS (
      SELECT count(*)::int4 AS messages, min(message_id) AS first_message_id, max(message_id) AS last_message_id,
             (array_agg(created_at ORDER BY message_id))[1] AS first_at
      FROM batch
    ),
    authors AS (
      -- an author's part of the batch: the messages they did not write (none: nothing)
      SELECT a.author_id, count(b.message_id)::int4 AS messages,
             min(b.message_id) AS first_message_id, max(b.message_id) AS last_message_id,
             (array_agg(b.created_at ORDER BY b.message_id))[1] AS first_at
      FROM (SELECT DISTINCT author_id FROM batch) a
      LEFT JOIN batch b ON b.author_id <> a.author_id
      GROUP BY a.author_id
    ),
    ${recipients.ctes},
    targets AS (
      SELECT g.id, g.is_dm,
             CASE WHEN a.author_id IS NULL THEN w.messages ELSE a.messages END AS messages,
             CASE WHEN a.author_id IS NULL THEN w.first_message_id ELSE a.first_message_id END AS first_message_id,
             CASE WHEN a.author_id IS NULL THEN w.first_at ELSE a.first_at END AS first_at,
             CASE WHEN a.author_id IS NULL THEN w.last_message_id ELSE a.last_message_id END AS last_message_id
      FROM registered g
      CROSS JOIN whole w
      LEFT JOIN authors a ON a.author_id = g.user_id
      WHERE a.author_id IS NULL OR a.messages > 0
    ),
    written AS (
      INSERT INTO push_pending AS p
        (registration_id, channel_id, message_count, first_message_id, first_at, last_message_id, is_dm, last_at, trace_parent)
      SELECT t.id, ${channel.id}, t.messages, t.first_message_id, t.first_at, t.last_message_id, t.is_dm, now(), ${traceparent ?? null}
      FROM targets t
      ORDER BY t.id
      ON CONFLICT (registration_id, channel_id) DO UPDATE SET
        message_count = p.message_count + EXCLUDED.message_count,
        first_message_id = LEAST(p.first_message_id, EXCLUDED.first_message_id),
        first_at = CASE WHEN EXCLUDED.first_message_id < p.first_message_id THEN EXCLUDED.first_at ELSE p.first_at END,
        last_message_id = GREATEST(p.last_message_id, EXCLUDED.last_message_id),
        is_dm = EXCLUDED.is_dm,
        last_at = now(),
        -- the trace of the message that created the row; an untraced row takes the next one's
        trace_parent = COALESCE(p.trace_parent, EXCLUDED.trace_parent)
      -- xmax = 0 only on a row version this statement inserted, not one it updated
      RETURNING p.registration_id, (p.xmax = 0) AS created
    )
    SELECT
      count(*) FILTER (WHERE NOT w.created)::int4 AS updated,
      COALESCE(array_agg(w.registration_id::text) FILTER (WHERE w.created), '{}') AS created,
      ${recipients.moreAfter} AS more_after
    FROM written w`;
}

/**
 * The CTE `registered (id, user_id, is_dm)`: the recipients' registrations in `range`, each
 * locked before its row is written, in id order. A registration deleted meanwhile is not
 * returned (the lock waits for the delete to commit, then skips the row) instead of failing the
 * insert on the foreign key; one held here cannot be deleted until this commits, and the sweep's
 * FOR UPDATE SKIP LOCKED passes it by. `moreAfter`: an expression, the head's last id when
 * recipients past it remain.
 *
 * The head finds every recipient's registration first and fences them (MATERIALIZED), then
 * takes the first few by id and only those are looked up again and locked: a LIMIT beside the
 * join could make the planner walk every registration in id order looking for a small channel's
 * members, and locking before the LIMIT would probe them all. Whether more remain is read from
 * the candidates, not from what was locked: a deleted registration among the first few must not
 * make the message look finished.
 */
function registeredRecipients(channel: ChannelRow, range: RecipientRange): { ctes: FragmentSqlToken; moreAfter: FragmentSqlToken } {
  const after = range.after === undefined ? sql.fragment`` : sql.fragment`WHERE r.id > ${range.after}`;
  const recipients = sql.fragment`
      FROM (${channelRecipients(channel.id, channel.server_id)}) recipient
      JOIN push_registrations r ON r.user_id = recipient.user_id
      ${after}`;
  if (range.first === undefined)
    return {
      ctes: sql.fragment`
    registered AS MATERIALIZED (
      SELECT r.id, recipient.user_id, recipient.is_dm
      ${recipients}
      ORDER BY r.id
      FOR KEY SHARE OF r
    )`,
      moreAfter: sql.fragment`NULL::text`,
    };
  return {
    ctes: sql.fragment`
    candidates AS MATERIALIZED (
      SELECT r.id, recipient.user_id, recipient.is_dm
      ${recipients}
    ),
    taken AS MATERIALIZED (
      SELECT id, user_id, is_dm FROM candidates ORDER BY id LIMIT ${range.first}
    ),
    registered AS MATERIALIZED (
      SELECT r.id, t.user_id, t.is_dm
      FROM taken t
      JOIN push_registrations r ON r.id = t.id
      ORDER BY r.id
      FOR KEY SHARE OF r
    )`,
    moreAfter: sql.fragment`CASE WHEN (SELECT count(*) FROM candidates) > ${range.first} THEN (SELECT max(id)::text FROM taken) END`,
  };
}

/**
 * Rows of this channel whose first message is one of `messageIds`: created by their first
 * delivery and not drained since. Found through the recipients (the primary key's order)
 * rather than by channel alone, which no index serves; a device that lost sight of the
 * channel meanwhile is rightly not woken.
 */
async function rowsOwnedBy(tx: DatabaseTransactionConnection, channel: ChannelRow, messageIds: readonly string[]): Promise<readonly string[]> {
  return tx.anyFirst(sql.type(z.object({ id: z.string() }))`
    SELECT r.id::text AS id
    FROM (${channelRecipients(channel.id, channel.server_id)}) recipient
    JOIN push_registrations r ON r.user_id = recipient.user_id
    JOIN push_pending p ON p.registration_id = r.id AND p.channel_id = ${channel.id}
    WHERE p.first_message_id = ANY(${sql.array(messageIds, 'int8')})`);
}

/**
 * What PostgreSQL saw, for the verdict: test-only triggers in the faults tier's database log
 *
 *   - every claim and every drain of a registration — a change of `wake_outstanding` or
 *     `last_woken_at` (a retried claim that rewrites its own values logs nothing); each claim
 *     is also announced on channel `fault_claim` when it commits (see `claimListener`);
 *   - every `push_pending` row deleted — by a drain (nothing else deletes here: no
 *     registration is deleted, and the 7-day pruning cannot match).
 *
 * `clock_timestamp()` is read inside the statement, so a claim is logged before its commit
 * and therefore before its wake can reach the distributor; the phones and the distributor
 * use the same clock (one machine).
 */
import pg from 'pg';
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';

export async function installAudit(pool: DatabasePool): Promise<void> {
  await pool.query(sql.unsafe`
    CREATE TABLE fault_registration_log (
      registration_id bigint NOT NULL,
      at timestamptz NOT NULL,
      old_outstanding boolean NOT NULL,
      old_last_woken_at timestamptz NULL,
      new_outstanding boolean NOT NULL,
      new_last_woken_at timestamptz NULL,
      old_priority text NULL,
      new_priority text NULL
    )`);
  await pool.query(sql.unsafe`
    CREATE FUNCTION fault_log_registration() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO fault_registration_log
      VALUES (NEW.id, clock_timestamp(), OLD.wake_outstanding, OLD.last_woken_at, NEW.wake_outstanding, NEW.last_woken_at,
              OLD.last_wake_priority, NEW.last_wake_priority);
      IF NEW.last_woken_at IS DISTINCT FROM OLD.last_woken_at THEN
        -- Delivered at commit, naming the process that claimed (its connection's application_name):
        -- that process is now sending the wake.
        PERFORM pg_notify('fault_claim', current_setting('application_name'));
      END IF;
      RETURN NEW;
    END $$`);
  await pool.query(sql.unsafe`
    CREATE TRIGGER fault_log_registration AFTER UPDATE ON push_registrations FOR EACH ROW
    WHEN (OLD.wake_outstanding IS DISTINCT FROM NEW.wake_outstanding OR OLD.last_woken_at IS DISTINCT FROM NEW.last_woken_at)
    EXECUTE FUNCTION fault_log_registration()`);
  await pool.query(sql.unsafe`
    CREATE TABLE fault_drained_rows (registration_id bigint NOT NULL, channel_id bigint NOT NULL, message_count integer NOT NULL, at timestamptz NOT NULL)`);
  await pool.query(sql.unsafe`
    CREATE FUNCTION fault_log_drained_row() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO fault_drained_rows VALUES (OLD.registration_id, OLD.channel_id, OLD.message_count, clock_timestamp());
      RETURN OLD;
    END $$`);
  await pool.query(sql.unsafe`
    CREATE TRIGGER fault_log_drained_row AFTER DELETE ON push_pending FOR EACH ROW EXECUTE FUNCTION fault_log_drained_row()`);
}

/** A claim: `last_woken_at` moved (the claim also sets `wake_outstanding`). */
export interface ClaimEntry {
  readonly registrationId: string;
  /** When the claiming statement ran (ms). */
  readonly at: number;
  /** The claim's `$now`: the workflow's clock (ms). */
  readonly now: number;
  /** The previous claim's `$now`, if any. */
  readonly previous: number | null;
  /** Claimed while the previous wake was outstanding, and not its escalation: a re-wake. */
  readonly rewake: boolean;
  /**
   * Claimed at HIGH while the previous wake, at NORMAL, was outstanding: the one escalation a
   * DM behind a server channel's wake gets, at the minimum interval rather than the re-wake's.
   */
  readonly escalation: boolean;
}

/** A drain that cleared an outstanding wake. */
export interface DrainEntry {
  readonly registrationId: string;
  readonly at: number;
}

export interface AuditLog {
  readonly claims: readonly ClaimEntry[];
  readonly drains: readonly DrainEntry[];
  /** Messages taken from `push_pending` by drains, per registration id. */
  readonly drainedMessages: ReadonlyMap<string, number>;
}

const logRow = z.object({
  registration_id: z.string(),
  at: z.date(),
  old_outstanding: z.boolean(),
  old_last_woken_at: z.date().nullable(),
  new_outstanding: z.boolean(),
  new_last_woken_at: z.date().nullable(),
  old_priority: z.enum(['normal', 'high']).nullable(),
  new_priority: z.enum(['normal', 'high']).nullable(),
});

export async function readAudit(pool: DatabasePool): Promise<AuditLog> {
  const rows = await pool.any(sql.type(logRow)`SELECT * FROM fault_registration_log ORDER BY at`);
  const claims: ClaimEntry[] = [];
  const drains: DrainEntry[] = [];
  for (const row of rows) {
    const moved = row.new_last_woken_at !== null && row.new_last_woken_at.getTime() !== row.old_last_woken_at?.getTime();
    if (moved) {
      const escalation = row.old_outstanding && row.old_priority === 'normal' && row.new_priority === 'high';
      claims.push({
        registrationId: row.registration_id,
        at: row.at.getTime(),
        now: row.new_last_woken_at!.getTime(),
        previous: row.old_last_woken_at?.getTime() ?? null,
        rewake: row.old_outstanding && !escalation,
        escalation,
      });
    } else if (row.old_outstanding && !row.new_outstanding) {
      drains.push({ registrationId: row.registration_id, at: row.at.getTime() });
    }
  }
  const drained = await pool.any(sql.type(z.object({ registration_id: z.string(), messages: z.number() }))`
    SELECT registration_id, sum(message_count)::int4 AS messages FROM fault_drained_rows GROUP BY registration_id`);
  return { claims, drains, drainedMessages: new Map(drained.map((r) => [r.registration_id, r.messages])) };
}

export interface ClaimListener {
  /** Resolves when the next claim commits, with the name of the process now sending its wake. */
  nextClaim(): Promise<string>;
  close(): Promise<void>;
}

/** Listens for committed claims, so that a fault can strike between a claim and its POST. */
export async function claimListener(databaseUrl: string): Promise<ClaimListener> {
  const client = new pg.Client({ connectionString: databaseUrl });
  client.on('error', () => undefined); // a PostgreSQL restart ends it; only the process-kill scenario uses it
  await client.connect();
  await client.query('LISTEN fault_claim');
  let waiting: Array<(claimer: string) => void> = [];
  client.on('notification', (message) => {
    const resolve = waiting;
    waiting = [];
    for (const r of resolve) r(message.payload ?? '');
  });
  return {
    nextClaim: () => new Promise<string>((resolve) => waiting.push(resolve)),
    close: () => client.end().catch(() => undefined),
  };
}

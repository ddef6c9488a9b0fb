/**
 * Which bridge replica's signaller sends the owed signals: the one holding a PostgreSQL session
 * advisory lock, on a connection of its own. One pacer for the whole deployment, so replicas
 * never add their windows ahead of a DM.
 *
 * What must stay true:
 *
 * - **One holder at a time.** `pg_try_advisory_lock` in its two-key form (a lock space apart
 *   from golang-migrate's one-key lock), held for the session; the others try again every
 *   `retryMs`.
 * - **A holder that dies lets go.** Its session ends with it: a killed process's socket closes,
 *   and for a holder that vanished from the network the server's own keepalives (set on the
 *   session: idle 10 s, then 3 probes 5 s apart) end the session within about 25 s. A standby
 *   then takes the lock at its next try.
 * - **A holder that cannot reach its session stops.** The connection answers a `SELECT 1` every
 *   `heartbeatMs` within `heartbeatTimeoutMs`, or the lock counts as lost: the signaller stops
 *   sending (what it did not finish stays owed) before another can have taken over for long.
 *   Should both send for a moment, a signal goes out twice: one more look for its workflow.
 *
 * DATABASE_URL must reach PostgreSQL in session mode (as migrations' lock already needs): a
 * transaction-mode pooler would hand the lock's session to other clients.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { postgresConnection } from '../db/connection.js';

/** The lock's two keys: "zpsh" and the signaller. */
export const signallerLockKeys = [0x7a707368, 1] as const;

export interface HeldLock {
  /** This holding, for the rows it takes (`claimed_by`). */
  readonly term: string;
  /** Resolves when the lock is lost: its session ended or stopped answering. */
  readonly lost: Promise<void>;
  /** Lets go of the lock (and its connection). */
  release(): Promise<void>;
}

export interface LockOptions {
  readonly retryMs?: number;
  readonly heartbeatMs?: number;
  readonly heartbeatTimeoutMs?: number;
}

/**
 * Waits until this replica holds the lock (or `signal` aborts: then undefined), trying every
 * `retryMs` on one connection kept open meanwhile. A connection that fails is reported through
 * `onError` and opened again.
 */
export async function acquireSignallerLock(
  databaseUrl: string,
  signal: AbortSignal,
  onError: (error: unknown) => void,
  options: LockOptions = {},
): Promise<HeldLock | undefined> {
  const retryMs = options.retryMs ?? 1_000;
  let client: pg.Client | undefined;
  while (!signal.aborted) {
    try {
      client ??= await connect(databaseUrl);
      const { rows } = await client.query<{ held: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS held', [...signallerLockKeys]);
      if (rows[0]?.held === true) {
        const held = holding(client, options);
        if (!signal.aborted) return held;
        await held.release();
        return undefined;
      }
    } catch (error) {
      onError(error);
      await client?.end().catch(() => undefined);
      client = undefined;
    }
    await sleep(retryMs, undefined, { signal }).catch(() => undefined);
  }
  await client?.end().catch(() => undefined);
  return undefined;
}

async function connect(databaseUrl: string): Promise<pg.Client> {
  const { url, ssl } = postgresConnection(databaseUrl);
  const client = new pg.Client({
    connectionString: url,
    ...(ssl === false ? {} : { ssl }),
    application_name: 'zippchat-push signaller',
    connectionTimeoutMillis: 5_000,
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
  });
  client.on('error', () => undefined); // a broken connection fails its next query, which the caller handles
  try {
    await client.connect();
    // Ignored over a Unix socket; over TCP the server notices a holder that vanished.
    await client.query('SET tcp_keepalives_idle = 10; SET tcp_keepalives_interval = 5; SET tcp_keepalives_count = 3');
    return client;
  } catch (error) {
    await client.end().catch(() => undefined);
    throw error;
  }
}

/** The lock held on `client`: watched by a heartbeat until it is lost or released. */
function holding(client: pg.Client, options: LockOptions): HeldLock {
  let lose!: () => void;
  const lost = new Promise<void>((resolve) => (lose = resolve));
  client.on('error', () => lose());
  client.on('end', () => lose());
  const heartbeat = setInterval(() => {
    const timer = setTimeout(lose, options.heartbeatTimeoutMs ?? 3_000);
    client.query('SELECT 1').then(
      () => clearTimeout(timer),
      () => {
        clearTimeout(timer);
        lose();
      },
    );
  }, options.heartbeatMs ?? 1_000);
  void lost.then(() => clearInterval(heartbeat));
  let released: Promise<void> | undefined;
  return {
    term: randomBytes(8).toString('hex'),
    lost,
    release: () =>
      (released ??= (async () => {
        clearInterval(heartbeat);
        lose();
        // Ending the session lets go of the lock; unlocking first says so at once where it can.
        await client.query('SELECT pg_advisory_unlock($1, $2)', [...signallerLockKeys]).catch(() => undefined);
        await client.end().catch(() => undefined);
      })()),
  };
}

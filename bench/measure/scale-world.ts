/**
 * The synthetic instance of the scale measurements (PostgreSQL at a million registrations), loaded with set-based
 * `INSERT … SELECT generate_series` (no api, no workflows): `registrations` users with one
 * device each and a live session, spread over background servers of 1,000 members (three
 * channels each, every device with a pending row in each), one notification setting per user,
 * and a server channel of each measured size with the role structure of the bridge benchmark
 * (item 6). A few rows are made due for each maintenance rule, so that its run has real work.
 *
 *   user i (1 … n)         id = firstUser + i; 7 in 10 on FCM (a 163-character token), the
 *                           rest on UnifiedPush (an endpoint URL, RFC 8291 keys)
 *   no live session         the last 1,000 users
 *   not re-registered 90 d  the 1,000 users before them
 *   untouched for 7 days    one pending row of every hundredth device
 *   forgettable ledger ids  one in a hundred, processed five days ago
 */
import { sql } from 'slonik';
import { type DatabasePool, VIEW_CHANNEL } from '../../src/testing.js';

const SEND_MESSAGES = 1n << 11n;

/** Id ranges of this world, clear of every other measurement's. */
const firstUser = 7_000_000_000_000n;
const firstServer = 7_100_000_000_000n;
const firstChannel = 7_200_000_000_000n;
const firstMessage = 7_300_000_000_000n;
/** Members of each background server. */
const backgroundMembers = 1_000;

export const dueForMaintenance = { noSession: 1_000, notReregistered90d: 1_000 } as const;

export interface SizedChannel {
  /** Members other than the author; one device each. */
  readonly members: number;
  readonly serverId: string;
  readonly channelId: string;
  /** The owner, who writes the message. */
  readonly authorId: string;
}

export interface ScaleWorld {
  readonly registrations: number;
  readonly pendingRows: number;
  readonly ledgerRows: number;
  readonly channels: readonly SizedChannel[];
  /** The user id of device i (1 … registrations). */
  userId(i: number): string;
  /** Seconds each step of the load took. */
  readonly loadSeconds: Readonly<Record<string, number>>;
  /** Rows each maintenance rule finds due. */
  readonly due: { readonly noSession: number; readonly notReregistered90d: number; readonly untouchedPending: number; readonly ledger: number };
}

export async function loadScaleWorld(
  pool: DatabasePool,
  options: {
    readonly registrations: number;
    readonly channelSizes: readonly number[];
    readonly pendingPerRegistration: number;
    readonly ledgerRows: number;
  },
): Promise<ScaleWorld> {
  const n = options.registrations;
  const perServer = options.pendingPerRegistration;
  const servers = Math.ceil(n / backgroundMembers);
  if (Math.max(...options.channelSizes) + 2 * dueForMaintenance.noSession + options.channelSizes.length > n) {
    throw new Error(`${n} registrations are too few for channels of ${options.channelSizes.join(', ')} members`);
  }
  const loadSeconds: Record<string, number> = {};
  const step = async (name: string, work: () => Promise<unknown>) => {
    const started = performance.now();
    process.stdout.write(`  loading ${name}…`);
    await work();
    loadSeconds[name] = (performance.now() - started) / 1000;
    process.stdout.write(` ${loadSeconds[name]!.toFixed(0)} s\n`);
  };
  const u = sql.fragment`${firstUser.toString()}::int8`;
  const N = sql.fragment`${n}::int8`;
  const noSessionFrom = n - dueForMaintenance.noSession + 1;
  const staleFrom = noSessionFrom - dueForMaintenance.notReregistered90d;
  // The background server of user i, and its j-th channel.
  const serverOf = (i: ReturnType<typeof sql.fragment>) => sql.fragment`(${firstServer.toString()}::int8 + 1 + ((${i} - 1) % ${servers}))`;
  const channelOf = (server: ReturnType<typeof sql.fragment>, j: ReturnType<typeof sql.fragment>) =>
    sql.fragment`(${firstChannel.toString()}::int8 + (${server} - ${firstServer.toString()}::int8 - 1) * ${perServer} + ${j})`;

  await step('users and sessions', async () => {
    await pool.query(sql.unsafe`INSERT INTO users (id, username) SELECT ${u} + g, 'scale-' || g FROM generate_series(1, ${N}) g`);
    await pool.query(sql.unsafe`
      INSERT INTO refresh_tokens (user_id, device_id, expires_at)
      SELECT ${u} + g, 'phone', now() + interval '30 days' FROM generate_series(1, ${noSessionFrom - 1}::int8) g`);
  });
  await step('background servers, members, channels, settings', async () => {
    await pool.query(sql.unsafe`
      INSERT INTO servers (id, owner_id, name) SELECT ${firstServer.toString()}::int8 + s, ${u} + s, 'background' FROM generate_series(1, ${servers}::int8) s`);
    await pool.query(sql.unsafe`
      INSERT INTO roles (id, server_id, permissions, position)
      SELECT ${firstServer.toString()}::int8 + s, ${firstServer.toString()}::int8 + s, ${(VIEW_CHANNEL | SEND_MESSAGES).toString()}::int8, 0
      FROM generate_series(1, ${servers}::int8) s`);
    await pool.query(sql.unsafe`
      INSERT INTO server_members (server_id, user_id) SELECT ${serverOf(sql.fragment`g`)}, ${u} + g FROM generate_series(1, ${N}) g ORDER BY 1, 2`);
    await pool.query(sql.unsafe`
      INSERT INTO channels (id, server_id, type)
      SELECT ${channelOf(sql.fragment`s`, sql.fragment`j`)}, s, 'text'
      FROM generate_series(${(firstServer + 1n).toString()}::int8, ${(firstServer + BigInt(servers)).toString()}::int8) s, generate_series(1, ${perServer}) j`);
    // Each user has one setting: their background server's first channel, muted by one in three.
    await pool.query(sql.unsafe`
      INSERT INTO notification_settings (user_id, scope_type, scope_id, muted)
      SELECT ${u} + g, 'channel', ${channelOf(serverOf(sql.fragment`g`), sql.fragment`1`)}, g % 3 = 0 FROM generate_series(1, ${N}) g`);
  });

  const channels: SizedChannel[] = [];
  await step('the measured channels (roles, overwrites, mutes)', async () => {
    for (const [k, members] of [...options.channelSizes].sort((a, b) => a - b).entries()) {
      const serverId = (firstServer + 1_000_000n + BigInt(k)).toString();
      const channelId = (firstChannel + 1_000_000n + BigInt(k)).toString();
      const roleIds = [1n, 2n, 3n].map((r) => (firstServer + 2_000_000n + BigInt(k) * 10n + r).toString());
      const authorId = (firstUser + BigInt(staleFrom - 1 - k)).toString();
      await pool.transaction(async (tx) => {
        await tx.query(sql.unsafe`INSERT INTO servers (id, owner_id, name) VALUES (${serverId}, ${authorId}, 'measured')`);
        await tx.query(
          sql.unsafe`INSERT INTO roles (id, server_id, permissions, position) VALUES (${serverId}, ${serverId}, ${(VIEW_CHANNEL | SEND_MESSAGES).toString()}, 0)`,
        );
        for (const [i, roleId] of roleIds.entries()) {
          await tx.query(
            sql.unsafe`INSERT INTO roles (id, server_id, permissions, position) VALUES (${roleId}, ${serverId}, ${(SEND_MESSAGES << BigInt(i)).toString()}, ${i + 1})`,
          );
        }
        await tx.query(sql.unsafe`
          INSERT INTO server_members (server_id, user_id)
          SELECT ${serverId}::int8, ${u} + g FROM generate_series(1, ${members}::int8) g UNION ALL SELECT ${serverId}::int8, ${authorId}::int8`);
        // Three members in four hold one of the extra roles.
        await tx.query(sql.unsafe`
          INSERT INTO member_roles (server_id, user_id, role_id)
          SELECT ${serverId}::int8, ${u} + g, (${sql.array(roleIds, 'int8')})[1 + (g % 4)] FROM generate_series(1, ${members}::int8) g WHERE g % 4 < 3`);
        await tx.query(sql.unsafe`INSERT INTO channels (id, server_id, type) VALUES (${channelId}, ${serverId}, 'text')`);
        await tx.query(sql.unsafe`
          INSERT INTO permission_overwrites (channel_id, target_type, target_id, allow, deny) VALUES
            (${channelId}, 'role', ${roleIds[0]!}, ${VIEW_CHANNEL.toString()}, 0),
            (${channelId}, 'role', ${roleIds[1]!}, 0, ${SEND_MESSAGES.toString()})`);
        // One member in a hundred mutes the channel; one in two hundred had a server mute that expired.
        await tx.query(sql.unsafe`
          INSERT INTO notification_settings (user_id, scope_type, scope_id, muted, mute_until)
          SELECT ${u} + g, 'channel', ${channelId}::int8, true, NULL FROM generate_series(50, ${members}::int8, 100) g
          UNION ALL
          SELECT ${u} + g, 'server', ${serverId}::int8, true, now() - interval '1 day' FROM generate_series(7, ${members}::int8, 200) g`);
      });
      channels.push({ members, serverId, channelId, authorId });
    }
  });

  await step('registrations', () =>
    // A device with pending rows has been woken; an hour ahead, so that no run's minutes age
    // it past the 15-minute re-wake (the heal step would otherwise wake every synthetic device).
    pool.query(sql.unsafe`
      INSERT INTO push_registrations (user_id, device_id, transport, token, up_p256dh, up_auth, wake_outstanding, last_woken_at, created_at, updated_at)
      SELECT ${u} + g, 'phone',
        CASE WHEN g % 10 < 7 THEN 'fcm' ELSE 'unifiedpush' END,
        CASE WHEN g % 10 < 7 THEN rpad(md5(g::text) || ':APA91b', 163, md5((g + 1)::text))
             ELSE 'https://ntfy.example.org/up' || md5(g::text) || '?up=1' END,
        CASE WHEN g % 10 < 7 THEN NULL ELSE decode('04' || repeat(md5(g::text), 4), 'hex') END,
        CASE WHEN g % 10 < 7 THEN NULL ELSE decode(md5(g::text), 'hex') END,
        true, now() + interval '1 hour',
        CASE WHEN g >= ${staleFrom} AND g < ${noSessionFrom} THEN now() - interval '100 days' ELSE now() END,
        CASE WHEN g >= ${staleFrom} AND g < ${noSessionFrom} THEN now() - interval '100 days' ELSE now() END
      FROM generate_series(1, ${N}) g ORDER BY g`),
  );
  await step('pending rows', () =>
    pool.query(sql.unsafe`
      INSERT INTO push_pending (registration_id, channel_id, message_count, first_message_id, first_at, last_message_id, is_dm, last_at)
      SELECT r.id, ${channelOf(serverOf(sql.fragment`(r.user_id - ${u})`), sql.fragment`j`)}, 1, ${firstMessage.toString()}::int8, now(), ${firstMessage.toString()}::int8, false,
        CASE WHEN j = 1 AND (r.user_id - ${u}) % 100 = 0 THEN now() - interval '8 days' ELSE now() END
      FROM push_registrations r, generate_series(1, ${perServer}) j
      WHERE r.user_id > ${u} AND r.user_id <= ${u} + ${N}
      ORDER BY r.id, j`),
  );
  await step('ledger of counted events', () =>
    pool.query(sql.unsafe`
      INSERT INTO push_processed_events (message_id, processed_at)
      SELECT ${firstMessage.toString()}::int8 + g, CASE WHEN g % 100 = 0 THEN now() - interval '5 days' ELSE now() END
      FROM generate_series(1, ${options.ledgerRows}::int8) g`),
  );
  await step('VACUUM ANALYZE', () => pool.query(sql.unsafe`VACUUM ANALYZE`));

  return {
    registrations: n,
    pendingRows: n * perServer,
    ledgerRows: options.ledgerRows,
    channels,
    userId: (i) => (firstUser + BigInt(i)).toString(),
    loadSeconds,
    due: {
      noSession: dueForMaintenance.noSession,
      notReregistered90d: dueForMaintenance.notReregistered90d,
      untouchedPending: Math.floor(n / 100),
      ledger: Math.floor(options.ledgerRows / 100),
    },
  };
}

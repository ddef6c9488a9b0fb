/**
 * The bridge's transaction at scale: a message to a server channel of each measured size
 * (`recordChannelEvents`) against the bare `INSERT … SELECT` (first message, every row
 * created) and `INSERT … ON CONFLICT DO UPDATE` (next message, every row updated) of the same
 * rows — wall time, the PostgreSQL backend's CPU time and WAL bytes per row — and naming the
 * created devices after the commit; then the same transaction taken apart, each part alone.
 * Runs on a pool of one connection, whose backend's CPU time is read from /proc.
 */
import { readFileSync } from 'node:fs';
import { sql } from 'slonik';
import { z } from 'zod';
import { channelRecipients, channelViewers, type DatabasePool, namingChunk, recordChannelEvents } from '../../src/testing.js';
import type { Report, Section } from '../report.js';
import { nextMessageId } from '../seed.js';
import { median } from '../stats.js';
import { bareInsert, clearChannel, nameDevices, withoutJit } from './pending-reference.js';
import type { SizedChannel } from './scale-world.js';

const bareInsertName = 'bare INSERT … SELECT of the same rows';
const bareUpsertName = 'bare INSERT … ON CONFLICT DO UPDATE of the same rows';

/** The registration ids of a channel's recipients (the author left out), in id order: the rows the bridge writes. */
export function recipientRegistrationIds(pool: DatabasePool, channel: SizedChannel): Promise<readonly string[]> {
  return pool.anyFirst(sql.type(z.object({ id: z.string() }))`
    SELECT r.id FROM (${channelRecipients(channel.channelId, channel.serverId)}) v JOIN push_registrations r ON r.user_id = v.user_id
    WHERE v.user_id <> ${channel.authorId} ORDER BY r.id`);
}

/** CPU seconds used so far by the backend of `pool`'s single connection (Linux, 100 ticks a second). */
async function backendCpu(pool: DatabasePool): Promise<() => number> {
  const pid = await pool.oneFirst(sql.type(z.object({ pid: z.number() }))`SELECT pg_backend_pid() AS pid`);
  return () => {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  };
}

/** One run of a statement: wall time, its backend's CPU time, the WAL it wrote. */
interface Sample {
  readonly ms: number;
  readonly cpuMs: number;
  readonly walBytes: number;
}

export async function measureBridge(pool: DatabasePool, report: Report, section: Section, channel: SizedChannel, repeats: number): Promise<void> {
  const { channelId } = channel;
  const ids = await recipientRegistrationIds(pool, channel);
  const array = sql.array(ids, 'int8');
  const cpu = await backendCpu(pool);
  const wal = () => pool.oneFirst(sql.type(z.object({ lsn: z.number() }))`SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::float8 AS lsn`);
  const measure = async (work: () => Promise<unknown>) => {
    const w = await wal();
    const c = cpu();
    const t = performance.now();
    await work();
    const ms = performance.now() - t;
    const cpuMs = (cpu() - c) * 1000;
    return { ms, cpuMs, walBytes: (await wal()) - w };
  };
  const clear = () => clearChannel(pool, channelId);
  const event = () => ({ messageId: nextMessageId(), channelId, authorId: channel.authorId, createdAt: new Date() });
  const bare = (conflict: boolean) => bareInsert(pool, channelId, array, conflict);
  const samples = { create: [] as Sample[], naming: [] as Sample[], update: [] as Sample[], insert: [] as Sample[], upsert: [] as Sample[] };
  let created: readonly string[] = [];
  let named = 0;
  await clear();
  for (let round = 0; round <= repeats; round++) {
    process.stdout.write(`  bridge, ${channel.members.toLocaleString('en-US')} members: round ${round}${round === 0 ? ' (warm-up)' : ''}\n`);
    const create = await measure(async () => (created = (await recordChannelEvents(pool, channelId, [event()])).registrationsToSignal));
    const naming = await measure(async () => (named = await nameDevices(pool, created)));
    const update = await measure(() => recordChannelEvents(pool, channelId, [event()]));
    await clear();
    const insert = await measure(() => bare(false));
    const upsert = await measure(() => bare(true));
    await clear();
    if (round === 0) continue;
    samples.create.push(create);
    samples.naming.push(naming);
    samples.update.push(update);
    samples.insert.push(insert);
    samples.upsert.push(upsert);
  }
  if (created.length !== ids.length || named !== ids.length)
    throw new Error(`the bridge created ${created.length} rows and named ${named} devices for ${ids.length} recipients`);
  const n = ids.length.toLocaleString('en-US');
  const size = channel.members.toLocaleString('en-US');
  const ms = (s: Sample[]) => median(s.map((x) => x.ms));
  const cpuMs = (s: Sample[]) => median(s.map((x) => x.cpuMs));
  report.figure(section, {
    name: `bridge, ${size}-member channel: first message, resolution + ${n} rows created`,
    value: ms(samples.create),
    unit: 'ms',
    reference: { name: bareInsertName, value: ms(samples.insert) },
    headline: 'scale: bridge',
  });
  report.figure(section, {
    name: `bridge, ${size}-member channel: the same, PostgreSQL backend CPU`,
    value: cpuMs(samples.create),
    unit: 'ms CPU',
    reference: { name: bareInsertName, value: cpuMs(samples.insert) },
  });
  report.figure(section, {
    name: `bridge, ${size}-member channel: after the commit, naming the ${n} created devices for their signals, ${namingChunk.toLocaleString('en-US')} per read`,
    value: ms(samples.naming),
    unit: 'ms',
    note: `outside the transaction and beside the signals: the first signals wait for one read of ${namingChunk.toLocaleString('en-US')}, the rest are named while earlier ones are sent`,
  });
  report.figure(section, {
    name: `bridge, ${size}-member channel: next message, resolution + ${n} rows updated`,
    value: ms(samples.update),
    unit: 'ms',
    reference: { name: bareUpsertName, value: ms(samples.upsert) },
  });
  report.figure(section, {
    name: `bridge, ${size}-member channel: next message, PostgreSQL backend CPU`,
    value: cpuMs(samples.update),
    unit: 'ms CPU',
    reference: { name: bareUpsertName, value: cpuMs(samples.upsert) },
  });
  const walPerRow = (s: Sample[]) => median(s.map((x) => x.walBytes)) / ids.length;
  report.figure(section, {
    name: `bridge, ${size}-member channel: WAL bytes per pending row, first message / next message`,
    value: walPerRow(samples.create),
    unit: 'B',
    reference: { name: 'next message (every row updated)', value: walPerRow(samples.update) },
  });
  const runs = (section.details.bridge ?? []) as unknown[];
  section.details.bridge = [
    ...runs,
    {
      members: channel.members,
      rows: ids.length,
      walBytesPerRow: { created: walPerRow(samples.create), updated: walPerRow(samples.update) },
      samples,
    },
  ];
}

/** Backend CPU (ms per message) of the bridge's transaction and of its parts, each run alone. */
export interface BridgeParts {
  readonly members: number;
  readonly rows: number;
  readonly cpuMs: Record<string, number>;
}

const partNames = {
  viewers: 'who may see the channel (members, roles, overwrites), counted',
  mutes: 'the same, less live mutes (one probe per viewer)',
  registrations: "the same, joined to the recipients' registrations",
  bare: 'bare INSERT … SELECT of the same rows (the reference)',
  bareUpsert: 'bare INSERT … ON CONFLICT DO UPDATE of the same rows, all new',
  ours: "the bridge's whole transaction (first message: every row created)",
} as const;

/**
 * The bridge's gap taken apart without instrumentation: each part runs alone, `repeats` times
 * on the single connection, and its backend's CPU time is read from /proc (10 ms ticks, so
 * summed over the repeats). Rows are cleared (and vacuumed) before each writing part, as in
 * `measureBridge`.
 */
export async function takeBridgeApart(pool: DatabasePool, channel: SizedChannel, repeats: number): Promise<BridgeParts> {
  const { channelId, serverId, authorId } = channel;
  const ids = await recipientRegistrationIds(pool, channel);
  const array = sql.array(ids, 'int8');
  const cpu = await backendCpu(pool);
  const clear = () => clearChannel(pool, channelId);
  const insert = (conflict: boolean) => bareInsert(pool, channelId, array, conflict);
  const parts: Record<keyof typeof partNames, { writes: boolean; run: () => Promise<unknown> }> = {
    viewers: { writes: false, run: () => withoutJit(pool, sql.unsafe`SELECT count(*) FROM (${channelViewers([channelId], undefined, serverId)}) v`) },
    mutes: { writes: false, run: () => withoutJit(pool, sql.unsafe`SELECT count(*) FROM (${channelRecipients(channelId, serverId)}) v`) },
    registrations: {
      writes: false,
      run: () =>
        withoutJit(
          pool,
          sql.unsafe`SELECT count(*) FROM (${channelRecipients(channelId, serverId)}) v JOIN push_registrations r ON r.user_id = v.user_id`,
        ),
    },
    bare: { writes: true, run: () => insert(false) },
    bareUpsert: { writes: true, run: () => insert(true) },
    ours: {
      writes: true,
      run: () => recordChannelEvents(pool, channelId, [{ messageId: nextMessageId(), channelId, authorId, createdAt: new Date() }]),
    },
  };
  process.stdout.write(`  bridge, ${channel.members.toLocaleString('en-US')} members: its parts, backend CPU…\n`);
  const total: Record<string, number> = {};
  for (let round = 0; round <= repeats; round++) {
    for (const [name, part] of Object.entries(parts)) {
      if (part.writes) await clear();
      const before = cpu();
      await part.run();
      if (round > 0) total[name] = (total[name] ?? 0) + (cpu() - before) * 1000;
    }
  }
  await clear();
  return { members: channel.members, rows: ids.length, cpuMs: Object.fromEntries(Object.entries(total).map(([k, v]) => [k, v / repeats])) };
}

export function reportBridgeParts(section: Section, runs: readonly BridgeParts[]): void {
  const ms = (r: BridgeParts, k: keyof typeof partNames) => r.cpuMs[k] ?? 0;
  section.tables.push({
    title:
      "The bridge's transaction taken apart: PostgreSQL backend CPU per message (ms), each part run alone, uninstrumented and with JIT off as in the bridge (10 ms ticks summed over the repeats, so ±10 ms ÷ repeats):",
    header: ['part', ...runs.map((r) => `${r.members.toLocaleString('en-US')} members (${r.rows.toLocaleString('en-US')} rows)`)],
    rows: [
      ...(Object.keys(partNames) as (keyof typeof partNames)[]).map((k) => [partNames[k], ...runs.map((r) => ms(r, k))]),
      ['the whole ÷ the bare INSERT', ...runs.map((r) => `${(ms(r, 'ours') / ms(r, 'bare')).toFixed(2)}×`)],
      [
        '— of which: resolving the recipients (viewers, mutes, registrations)',
        ...runs.map((r) => `${(ms(r, 'registrations') / ms(r, 'bare')).toFixed(2)}×`),
      ],
      [
        '— of which: ON CONFLICT arbitration (bare upsert − bare insert)',
        ...runs.map((r) => `${((ms(r, 'bareUpsert') - ms(r, 'bare')) / ms(r, 'bare')).toFixed(2)}×`),
      ],
      [
        '— of which: the rest (per-author shares, order, the created ids, ledger, transaction)',
        ...runs.map((r) => `${((ms(r, 'ours') - ms(r, 'registrations') - ms(r, 'bareUpsert')) / ms(r, 'bare')).toFixed(2)}×`),
      ],
    ],
  });
  section.details.bridgeParts = runs;
}

/**
 * Issue 17, items 1 and 4 (the bridge's half) — PostgreSQL at a million registrations, loaded
 * set-based (bench/measure/scale-world.ts), no workflows:
 *
 *   - the bridge's transaction for a message to server channels of 10,000 and 100,000 members
 *     (`recordChannelEvents`) against the bare `INSERT … SELECT` of the same rows, in wall time
 *     and in the PostgreSQL backend's CPU time, and EXPLAIN ANALYZE of what the difference is
 *     made of;
 *   - a drain with millions of rows in `push_pending` (`drainPending`) against the bare
 *     statements that take the same rows;
 *   - the maintenance run as the tree has it (the real workflow on a worker process, the
 *     session sweep, the 90-day and 7-day rules, the ledger), one run and a full pass, each rule
 *     beside one bare statement over the whole table;
 *   - table and index sizes per million rows beside the rows' own bytes.
 */
import { readFileSync } from 'node:fs';
import { sql } from 'slonik';
import { z } from 'zod';
import { drainPending } from '../../src/api/drain.js';
import { channelRecipients } from '../../src/bridge/recipients.js';
import { channelViewers } from '../../src/db/permissions.js';
import { pendingUpsert, recordChannelEvents } from '../../src/bridge/record-events.js';
import { createDatabasePool, type DatabasePool } from '../../src/db/pool.js';
import { maintenanceWorkflowType } from '../../temporal/names.js';
import type { MaintenanceReport, MaintenanceStep } from '../../workflows/maintenance.js';
import { fetchEvents, historyCost, typeName } from '../history.js';
import type { Report, Section } from '../report.js';
import type { BenchSettings } from '../settings.js';
import { setupProse } from '../setup-prose.js';
import { nextMessageId } from '../seed.js';
import { namingChunk } from '../../src/bridge/signal-pending.js';
import { bareInsert, clearChannel, nameDevices, withoutJit } from './pending-reference.js';
import type { BenchStack, RunningApps } from '../stack.js';
import { median, quantile } from '../stats.js';
import { loadScaleWorld, type ScaleWorld, type SizedChannel } from './scale-world.js';

const bareInsertName = 'bare INSERT … SELECT of the same rows';
const bareUpsertName = 'bare INSERT … ON CONFLICT DO UPDATE of the same rows';

export async function measureScalePostgres(stack: BenchStack, report: Report, settings: BenchSettings): Promise<void> {
  const section = report.section('scale', `Scale: PostgreSQL at ${settings.atScale.registrations.toLocaleString('en-US')} registrations`, 'scale');
  const { pool } = stack;
  const world = await loadScaleWorld(pool, settings.atScale);
  section.details.load = {
    seconds: world.loadSeconds,
    registrations: world.registrations,
    pendingRows: world.pendingRows,
    ledgerRows: world.ledgerRows,
  };

  await measureSizes(pool, report, section);
  // One connection, so that its backend's CPU time can be read from /proc.
  const single = await createDatabasePool(stack.databaseUrl, { maximumPoolSize: 1, statementTimeoutMs: 600_000 });
  try {
    for (const channel of world.channels) await measureBridge(single, report, section, channel, settings.atScale.bridgeRepeats);
    const parts = [];
    for (const channel of world.channels) parts.push(await takeBridgeApart(single, channel, settings.atScale.bridgeRepeats));
    reportBridgeParts(section, parts);
    await explainBridge(single, section, world.channels.at(-1)!);
    await measureDrain(single, report, section, world, settings.atScale.drainDevices);
  } finally {
    await single.end();
  }
  await measureMaintenance(stack, report, section, world, settings.atScale.maintenanceMaxRuns);

  section.setup.push(
    ...setupProse('scale', {
      loadSteps: Object.entries(world.loadSeconds)
        .map(([step, s]) => `${step} ${s.toFixed(0)} s`)
        .join(', '),
      registrations: world.registrations.toLocaleString('en-US'),
      pendingRows: world.pendingRows.toLocaleString('en-US'),
      ledgerRows: world.ledgerRows.toLocaleString('en-US'),
      channelSizes: world.channels.map((c) => c.members.toLocaleString('en-US')).join(' and '),
      noSession: world.due.noSession.toLocaleString('en-US'),
      notReregistered90d: world.due.notReregistered90d.toLocaleString('en-US'),
      untouchedPending: world.due.untouchedPending.toLocaleString('en-US'),
      ledgerDue: world.due.ledger.toLocaleString('en-US'),
    }),
  );
}

// ---------------------------------------------------------------------------------------------
// Sizes

async function measureSizes(pool: DatabasePool, report: Report, section: Section): Promise<void> {
  // Per the rows actually there (other measurements' few are counted in).
  const tables = [
    { table: 'push_registrations', per: 'per 1,000,000 registrations' },
    { table: 'push_pending', per: 'per 1,000,000 pending rows' },
    { table: 'push_processed_events', per: 'per 1,000,000 counted events' },
  ];
  const mib = (bytes: number, rows: number) => ((bytes / rows) * 1_000_000) / 2 ** 20;
  const rows: (string | number)[][] = [];
  for (const { table, per } of tables) {
    const sizes = await pool.one(sql.type(z.object({ heap: z.number(), indexes: z.number(), total: z.number(), data: z.number(), rows: z.number() }))`
      SELECT pg_relation_size(${table}::regclass)::float8 AS heap, pg_indexes_size(${table}::regclass)::float8 AS indexes,
             pg_total_relation_size(${table}::regclass)::float8 AS total,
             (SELECT sum(pg_column_size(t.*))::float8 FROM ${sql.identifier([table])} t) AS data,
             (SELECT count(*)::float8 FROM ${sql.identifier([table])}) AS rows`);
    report.figure(section, {
      name: `${table}: table + indexes (TOAST included), ${per}`,
      value: mib(sizes.total, sizes.rows),
      unit: 'MiB',
      reference: { name: "the rows' own bytes (sum of pg_column_size)", value: mib(sizes.data, sizes.rows) },
      ...(table === 'push_registrations' ? { headline: 'scale: sizes' } : {}),
    });
    const indexes = await pool.any(sql.type(z.object({ name: z.string(), bytes: z.number() }))`
      SELECT c.relname AS name, pg_relation_size(c.oid)::float8 AS bytes
      FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = ${table}::regclass ORDER BY c.relname`);
    rows.push([table, 'heap', mib(sizes.heap, sizes.rows)]);
    for (const index of indexes) rows.push([table, `index ${index.name}`, mib(index.bytes, sizes.rows)]);
  }
  section.tables.push({
    title: 'Sizes per million rows of each table (MiB), after `VACUUM ANALYZE`:',
    header: ['table', 'part', 'MiB per 1,000,000 rows'],
    rows,
  });
}

// ---------------------------------------------------------------------------------------------
// The bridge's transaction

/** CPU seconds used so far by the backend of `pool`'s single connection (Linux, 100 ticks a second). */
async function backendCpu(pool: DatabasePool): Promise<() => number> {
  const pid = await pool.oneFirst(sql.type(z.object({ pid: z.number() }))`SELECT pg_backend_pid() AS pid`);
  return () => {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  };
}

async function measureBridge(pool: DatabasePool, report: Report, section: Section, channel: SizedChannel, repeats: number): Promise<void> {
  const { channelId } = channel;
  const ids = await pool.anyFirst(sql.type(z.object({ id: z.string() }))`
    SELECT r.id FROM (${channelRecipients(channelId, channel.serverId)}) v JOIN push_registrations r ON r.user_id = v.user_id
    WHERE v.user_id <> ${channel.authorId} ORDER BY r.id`);
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
interface BridgeParts {
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
async function takeBridgeApart(pool: DatabasePool, channel: SizedChannel, repeats: number): Promise<BridgeParts> {
  const { channelId, serverId, authorId } = channel;
  const ids = await pool.anyFirst(sql.type(z.object({ id: z.string() }))`
    SELECT r.id FROM (${channelRecipients(channelId, serverId)}) v JOIN push_registrations r ON r.user_id = v.user_id
    WHERE v.user_id <> ${authorId} ORDER BY r.id`);
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

function reportBridgeParts(section: Section, runs: readonly BridgeParts[]): void {
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

interface Sample {
  readonly ms: number;
  readonly cpuMs: number;
  readonly walBytes: number;
}

/**
 * EXPLAIN ANALYZE of the bridge's upsert and of the bare INSERT for the largest channel, each
 * in a transaction rolled back: the time of each plan node (less its children's), summed by
 * what the node is for. Instrumentation slows every node, so the shares are what to read.
 */
async function explainBridge(pool: DatabasePool, section: Section, channel: SizedChannel): Promise<void> {
  const channelRow = { id: channel.channelId, server_id: channel.serverId };
  const events = [{ messageId: nextMessageId(), channelId: channel.channelId, authorId: channel.authorId, createdAt: new Date() }];
  const upsert = sql.unsafe`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${pendingUpsert(channelRow, events)}`;
  // As the bridge runs it: JIT off (recordChannelEvents). What JIT would cost it is measured apart.
  const ours = await explain(pool, upsert, categorize, { jit: 'off' });
  await reportJit(pool, section, channel, upsert);
  const ids = await pool.anyFirst(sql.type(z.object({ id: z.string() }))`
    SELECT r.id FROM (${channelRecipients(channel.channelId, channel.serverId)}) v JOIN push_registrations r ON r.user_id = v.user_id
    WHERE v.user_id <> ${channel.authorId} ORDER BY r.id`);
  const m = nextMessageId();
  const bare = await explain(
    pool,
    sql.unsafe`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)
      INSERT INTO push_pending AS p (registration_id, channel_id, message_count, first_message_id, first_at, last_message_id, is_dm, last_at)
      SELECT id, ${channel.channelId}, 1, ${m}, now(), ${m}, false, now() FROM unnest(${sql.array(ids, 'int8')}) AS id ORDER BY id`,
    (n) => (isInsert(n) ? insertItself : n['Node Type'] === 'Sort' ? inOrder : 'the ids to insert (unnest)'),
    { jit: 'off' },
  );
  const categories = [...new Set([...Object.keys(ours.byCategory), ...Object.keys(bare.byCategory)])].sort(
    (a, b) => (ours.byCategory[b] ?? 0) - (ours.byCategory[a] ?? 0),
  );
  section.tables.push({
    title: `Where the bridge's time goes: EXPLAIN ANALYZE of its upsert statement and of the bare INSERT, ${channel.members.toLocaleString('en-US')}-member channel (ms of each plan node less its children, summed by purpose; instrumented, so read the shares):`,
    header: ['what', 'the bridge (ms)', 'share', 'bare INSERT (ms)', 'share'],
    rows: [
      ...categories.map((c) => [
        c,
        ours.byCategory[c] ?? 0,
        pct(ours.byCategory[c] ?? 0, ours.total),
        bare.byCategory[c] ?? 0,
        pct(bare.byCategory[c] ?? 0, bare.total),
      ]),
      ['total (execution + triggers)', ours.total, '100%', bare.total, '100%'],
    ],
  });
  section.details.explain = {
    ours: ours.nodes,
    bare: bare.nodes,
    planningMs: { ours: ours.planningMs, bare: bare.planningMs },
    byCategory: { ours: ours.byCategory, bare: bare.byCategory },
  };
  const gap = categories
    .map((c) => [c, (ours.byCategory[c] ?? 0) - (bare.byCategory[c] ?? 0)] as const)
    .filter(([, ms]) => ms > 0.05 * (ours.total - bare.total))
    .sort((a, b) => b[1] - a[1]);
  section.setup.push(
    ...setupProse('scale-bridge-gap', {
      members: channel.members.toLocaleString('en-US'),
      oursMs: ours.total.toFixed(0),
      bareMs: bare.total.toFixed(0),
      gap: gap.map(([c, ms]) => `${c} ${ms.toFixed(0)} ms`).join(', '),
    }),
  );
}

const pct = (part: number, whole: number) => `${Math.round((100 * part) / whole)}%`;

interface PlanNode {
  readonly 'Node Type': string;
  readonly 'Relation Name'?: string;
  readonly 'Index Name'?: string;
  readonly 'Subplan Name'?: string;
  readonly 'CTE Name'?: string;
  readonly 'Sort Key'?: readonly string[];
  readonly 'Actual Total Time': number;
  readonly 'Actual Loops': number;
  readonly Plans?: readonly PlanNode[];
}

interface Explained {
  readonly byCategory: Record<string, number>;
  readonly total: number;
  readonly planningMs: number;
  readonly nodes: { node: string; ms: number; category: string }[];
}

/** PostgreSQL settings for one EXPLAIN's transaction (`SET LOCAL`). */
type PlannerSettings = Readonly<Record<string, string>>;

interface ExplainOutput {
  Plan: PlanNode;
  'Planning Time': number;
  'Execution Time': number;
  Triggers?: { 'Trigger Name': string; Time: number }[];
  JIT?: { Functions: number; Options: Record<string, boolean>; Timing: { Total: number } };
}

/** `statement` (an EXPLAIN ANALYZE … FORMAT JSON) run in a transaction rolled back, under `settings`. */
async function explainOutput(pool: DatabasePool, statement: ReturnType<typeof sql.unsafe>, settings: PlannerSettings): Promise<ExplainOutput> {
  let plan: unknown;
  await pool
    .transaction(async (tx) => {
      for (const [name, value] of Object.entries(settings)) await tx.query(sql.unsafe`SELECT set_config(${name}, ${value}, true)`);
      plan = await tx.oneFirst(statement);
      throw new Rollback();
    })
    .catch((error: unknown) => {
      if (!(error instanceof Rollback)) throw error;
    });
  return ((typeof plan === 'string' ? JSON.parse(plan) : plan) as [ExplainOutput])[0];
}

/**
 * What JIT compilation would add to the bridge's upsert, which turns it off: with PostgreSQL's
 * default thresholds, and once the statement's estimated cost passes jit_optimize_above_cost
 * and jit_inline_above_cost (as it does for a larger channel; here the thresholds are lowered
 * to just under this statement's cost instead).
 */
async function reportJit(pool: DatabasePool, section: Section, channel: SizedChannel, upsert: ReturnType<typeof sql.unsafe>): Promise<void> {
  const byDefault = await explainOutput(pool, upsert, { jit: 'on' });
  const cost = (byDefault.Plan as PlanNode & { 'Total Cost': number })['Total Cost'];
  const threshold = String(Math.floor(cost * 0.9));
  const optimized = await explainOutput(pool, upsert, { jit: 'on', jit_optimize_above_cost: threshold, jit_inline_above_cost: threshold });
  const describe = (o: ExplainOutput) =>
    o.JIT === undefined
      ? 'none (below jit_above_cost)'
      : `${o.JIT.Timing.Total.toFixed(0)} ms for ${o.JIT.Functions} functions (${Object.entries(o.JIT.Options)
          .filter(([, on]) => on)
          .map(([option]) => option.toLowerCase())
          .join(', ')})`;
  section.details.jit = { estimatedCost: cost, byDefault: byDefault.JIT ?? null, optimized: optimized.JIT ?? null };
  section.setup.push(
    ...setupProse('scale-jit', {
      members: channel.members.toLocaleString('en-US'),
      cost: cost.toFixed(0),
      withDefaultThresholds: describe(byDefault),
      membersForThresholds: Math.ceil((500_000 / cost) * channel.members).toLocaleString('en-US'),
      pastThresholds: describe(optimized),
      executionMs: byDefault['Execution Time'].toFixed(0),
    }),
  );
}

async function explain(
  pool: DatabasePool,
  statement: ReturnType<typeof sql.unsafe>,
  categorize: (n: PlanNode, scope: string) => string,
  settings: PlannerSettings = {},
): Promise<Explained> {
  const top = await explainOutput(pool, statement, settings);
  const byCategory: Record<string, number> = {};
  const nodes: Explained['nodes'] = [];
  const cteTime = new Map<string, number>();
  const inclusive = (n: PlanNode) => n['Actual Total Time'] * n['Actual Loops'];
  // Each CTE's subplan is charged where it is defined; its scans are charged only beyond it.
  const collectCtes = (n: PlanNode) => {
    if (n['Subplan Name']?.startsWith('CTE ')) cteTime.set(n['Subplan Name'].slice(4), inclusive(n));
    n.Plans?.forEach(collectCtes);
  };
  collectCtes(top.Plan);
  const walk = (n: PlanNode, within: string) => {
    const scope = n['Subplan Name']?.startsWith('CTE ') ? n['Subplan Name'].slice(4) : within;
    let own = inclusive(n) - (n.Plans ?? []).reduce((a, c) => a + inclusive(c), 0);
    if (n['Node Type'] === 'CTE Scan' && n['CTE Name'] !== undefined) {
      const pending = cteTime.get(n['CTE Name']) ?? 0;
      const charged = Math.min(pending, Math.max(0, own));
      cteTime.set(n['CTE Name'], pending - charged);
      own -= charged;
    }
    own = Math.max(0, own);
    const category = categorize(n, scope);
    byCategory[category] = (byCategory[category] ?? 0) + own;
    nodes.push({
      node: `${n['Node Type']}${n['Relation Name'] ? ` on ${n['Relation Name']}` : ''}${n['Index Name'] ? ` using ${n['Index Name']}` : ''}`,
      ms: own,
      category,
    });
    n.Plans?.forEach((c) => walk(c, scope));
  };
  walk(top.Plan, 'top');
  for (const trigger of top.Triggers ?? []) {
    const name = /^RI_ConstraintTrigger|fkey/.test(trigger['Trigger Name'])
      ? 'foreign-key check of each new row (RI trigger)'
      : `trigger ${trigger['Trigger Name']}`;
    byCategory[name] = (byCategory[name] ?? 0) + trigger.Time;
  }
  const total = Object.values(byCategory).reduce((a, b) => a + b, 0);
  return { byCategory, total, planningMs: top['Planning Time'], nodes: nodes.filter((n) => n.ms >= 1).sort((a, b) => b.ms - a.ms) };
}

const insertItself = 'the insert itself (heap, primary key; ours: ON CONFLICT arbitration)';
const inOrder = 'rows sorted in registration-id order for the insert';
const isInsert = (n: PlanNode) => n['Node Type'] === 'ModifyTable' || n['Node Type'] === 'Insert';
const hostTables = new Set(['server_members', 'member_roles', 'roles', 'permission_overwrites', 'channels', 'servers', 'channel_members']);

/** Every relation and CTE a node reads, itself and below. */
function reads(n: PlanNode): Set<string> {
  const found = new Set<string>();
  const visit = (m: PlanNode) => {
    if (m['Relation Name'] !== undefined) found.add(`${m['Relation Name']}${m['Index Name'] === undefined ? '' : `:${m['Index Name']}`}`);
    if (m['CTE Name'] !== undefined) found.add(`cte:${m['CTE Name']}`);
    m.Plans?.forEach(visit);
  };
  visit(n);
  return found;
}

/** What a node of the bridge's upsert is for: by the tables it reads and where it sits. */
function categorize(n: PlanNode, scope: string): string {
  if (isInsert(n)) return insertItself;
  const below = [...reads(n)];
  const only = (test: (r: string) => boolean) => below.length > 0 && below.every(test);
  if (only((r) => r.startsWith('notification_settings'))) return 'mutes: one probe per viewer';
  if (only((r) => r.startsWith('push_registrations'))) return "the recipients' registrations";
  if (only((r) => r === 'cte:batch')) return 'the batch (message ids, authors)';
  if (n['Node Type'] === 'Sort' && (n['Sort Key'] ?? []).some((k) => /^r(_\d+)?\.id$/.test(k))) return inOrder;
  if (scope === 'top') return "the answer: the created rows' registration ids";
  if (only((r) => hostTables.has(r.split(':')[0]!))) return 'recipients: members, roles, overwrites';
  return 'recipients: joins and grouping (members × roles, mutes, registrations)';
}

class Rollback extends Error {
  constructor() {
    super('rollback');
  }
}

// ---------------------------------------------------------------------------------------------
// Drain

async function measureDrain(pool: DatabasePool, report: Report, section: Section, world: ScaleWorld, devices: number): Promise<void> {
  // Devices spread over the table (ids in every part of the indexes), outside the measured channels.
  const start = Math.max(...world.channels.map((c) => c.members)) + 1;
  const last = world.registrations - 2 * world.due.noSession - world.channels.length - 1;
  const stepBy = Math.max(1, Math.floor((last - start) / (2 * devices)));
  const picked = Array.from({ length: 2 * devices }, (_, k) => world.userId(start + k * stepBy));
  const ours: number[] = [];
  const bare: number[] = [];
  let items = 0;
  for (const [k, userId] of picked.entries()) {
    const t = performance.now();
    if (k % 2 === 0) {
      const drained = await drainPending(pool, { userId, deviceId: 'phone' });
      ours.push(performance.now() - t);
      items += drained?.length ?? 0;
    } else {
      await pool.transaction(async (tx) => {
        const id = await tx.oneFirst(sql.type(z.object({ id: z.string() }))`
          UPDATE push_registrations SET wake_outstanding = false WHERE user_id = ${userId} AND device_id = 'phone' RETURNING id`);
        await tx.any(sql.unsafe`
          DELETE FROM push_pending WHERE registration_id = ${id}
          RETURNING channel_id, message_count, first_message_id, first_at, last_message_id`);
      });
      bare.push(performance.now() - t);
    }
  }
  const rows = world.pendingRows.toLocaleString('en-US');
  const refName = 'bare: the same UPDATE and DELETE … RETURNING, no visibility re-check';
  report.figure(section, {
    name: `drain with ${rows} rows in push_pending: latency p50`,
    value: quantile(ours, 0.5),
    unit: 'ms',
    reference: { name: refName, value: quantile(bare, 0.5) },
    headline: 'scale: drain',
  });
  report.figure(section, {
    name: `drain with ${rows} rows in push_pending: latency p99`,
    value: quantile(ours, 0.99),
    unit: 'ms',
    reference: { name: refName, value: quantile(bare, 0.99) },
  });
  section.setup.push(...setupProse('scale-drain', { devices, items }));
}

// ---------------------------------------------------------------------------------------------
// Maintenance

/** The rules measured; the Temporal reconciliation steps are left out (with a million registrations and no workflows they would start a million). */
const maintenanceSteps: readonly MaintenanceStep[] = ['noSession', 'notReregistered90d', 'untouchedPendingRows', 'processedEvents', 'stranded'];

/** Activity type → the rule it runs (both trees' names). */
const ruleOf: Readonly<Record<string, string>> = {
  pruneWithoutSession: 'no live session (the session sweep)',
  pruneStale: 'not re-registered for 90 days',
  pruneUntouchedPending: 'pending rows untouched for 7 days',
  pruneProcessedEvents: 'counted-event ids past retention',
  healStranded: 'stranded devices (heal)',
};

interface RunCost {
  readonly seconds: number;
  readonly report: Record<string, unknown>;
  /** Per activity type: calls, seconds (scheduled → completed), its last result. */
  readonly steps: Record<string, { calls: number; seconds: number; last: unknown }>;
  readonly events: number;
  readonly actions: number;
  /** Steps whose pass goes on in the next run. */
  readonly unfinished: readonly MaintenanceStep[];
}

async function measureMaintenance(stack: BenchStack, report: Report, section: Section, world: ScaleWorld, maxRuns: number): Promise<void> {
  const { pool } = stack;
  const bare = async (statement: ReturnType<typeof sql.unsafe>) => {
    let ms = 0;
    await pool
      .transaction(async (tx) => {
        const t = performance.now();
        await tx.query(statement);
        ms = performance.now() - t;
        throw new Rollback();
      })
      .catch((error: unknown) => {
        if (!(error instanceof Rollback)) throw error;
      });
    return ms / 1000;
  };
  process.stdout.write('  maintenance: bare statements (rolled back)…\n');
  const references: Record<string, number> = {
    pruneWithoutSession: await bare(sql.unsafe`
      DELETE FROM push_registrations r WHERE NOT EXISTS (
        SELECT 1 FROM refresh_tokens t WHERE t.user_id = r.user_id AND t.device_id = r.device_id AND t.revoked_at IS NULL AND t.expires_at > now())`),
    pruneStale: await bare(sql.unsafe`DELETE FROM push_registrations WHERE updated_at < now() - interval '90 days'`),
    pruneUntouchedPending: await bare(sql.unsafe`DELETE FROM push_pending WHERE last_at < now() - interval '7 days'`),
    pruneProcessedEvents: await bare(sql.unsafe`DELETE FROM push_processed_events WHERE processed_at < now() - interval '4 days'`),
  };

  // Every scan from the beginning of its table: a pass another measurement left half-way
  // would make the first run's cost and the full pass below a fraction of the real ones.
  await pool.query(sql.unsafe`DELETE FROM push_maintenance_cursors`);
  let apps: RunningApps | undefined;
  const runs: RunCost[] = [];
  try {
    apps = await stack.startApps({ label: 'scale', taskQueue: 'bench-scale', apps: ['worker'] });
    for (let run = 0; run < maxRuns; run++) {
      process.stdout.write(`  maintenance run ${run + 1}…`);
      const cost = await maintenanceRun(stack, run);
      runs.push(cost);
      process.stdout.write(` ${cost.seconds.toFixed(1)} s${cost.unfinished.length > 0 ? ` (unfinished: ${cost.unfinished.join(', ')})` : ''}\n`);
      // The next run goes on where this one stopped (the positions are in PostgreSQL).
      if (cost.unfinished.length === 0) break;
    }
  } finally {
    await apps?.stop();
  }
  const first = runs[0]!;
  const rules = Object.keys(ruleOf).filter((a) => first.steps[a] !== undefined);
  report.figure(section, {
    name: `maintenance: one run of the rules below over ${world.registrations.toLocaleString('en-US')} registrations (start → result)`,
    value: first.seconds,
    unit: 's',
    reference: { name: 'the four bare DELETEs over the whole tables (rolled back)', value: Object.values(references).reduce((a, b) => a + b, 0) },
    headline: 'scale: maintenance',
  });
  for (const activity of rules) {
    const step = first.steps[activity]!;
    const reference = references[activity];
    report.figure(section, {
      name: `maintenance, one run: ${ruleOf[activity]} (${step.calls} activity calls)`,
      value: step.seconds,
      unit: 's',
      ...(reference === undefined ? {} : { reference: { name: 'one bare DELETE over the table (rolled back)', value: reference } }),
    });
  }
  // The sweep's full pass: its activity time in every run from the first (which starts at the
  // first registration) to the one whose pass reached the end of the table.
  const completedAt = runs.findIndex((c) => !c.unfinished.includes('noSession'));
  const passRuns = completedAt < 0 ? runs : runs.slice(0, completedAt + 1);
  const fullPass = completedAt < 0 ? null : passRuns.reduce((a, c) => a + (c.steps.pruneWithoutSession?.seconds ?? 0), 0);
  const passCalls = passRuns.reduce((a, c) => a + (c.steps.pruneWithoutSession?.calls ?? 0), 0);
  report.figure(section, {
    name: `the session sweep's full pass over ${world.registrations.toLocaleString('en-US')} registrations (its activity time: ${passCalls} calls over ${passRuns.length} run${passRuns.length === 1 ? '' : 's'})`,
    value: fullPass,
    unit: 's',
    reference: { name: 'one bare DELETE … WHERE NOT EXISTS over the table (rolled back)', value: references.pruneWithoutSession ?? null },
    ...(completedAt < 0 ? { note: `not complete after ${runs.length} runs` } : {}),
    headline: 'scale: maintenance',
  });
  report.figure(section, { name: 'maintenance: history events of one run', value: first.events, unit: 'events' });
  report.figure(section, { name: 'maintenance: billable actions (estimate) of one run — 144 runs a day', value: first.actions, unit: 'actions' });
  section.tables.push({
    title: "Maintenance runs (the real workflow on a worker process; seconds are each activity's scheduled → completed, summed per rule):",
    header: [
      'run',
      'start → result (s)',
      ...rules.map((a) => `${ruleOf[a]} (s, calls)`),
      'pruned / healed',
      'unfinished (next run goes on)',
      'history events',
      'actions (estimate)',
    ],
    rows: runs.map((c, i) => [
      String(i + 1),
      c.seconds,
      ...rules.map((a) => (c.steps[a] === undefined ? '—' : `${c.steps[a]!.seconds.toFixed(1)} s, ${c.steps[a]!.calls}`)),
      Object.entries(c.report)
        .filter(([, v]) => typeof v === 'number' && v > 0)
        .map(([k, v]) => `${k} ${String(v)}`)
        .join(', ') || 'nothing',
      c.unfinished.join(', ') || 'none',
      c.events,
      c.actions,
    ]),
  });
  section.details.maintenance = { references, runs };
  section.setup.push(...setupProse('scale-maintenance', { steps: maintenanceSteps.join(', '), maxRuns }));
}

async function maintenanceRun(stack: BenchStack, run: number): Promise<RunCost> {
  const workflowId = `bench-scale-maintenance-${run}-${Date.now()}`;
  const started = performance.now();
  const result: MaintenanceReport = await stack.temporal.workflow.execute(maintenanceWorkflowType, {
    taskQueue: 'bench-scale',
    workflowId,
    args: [{ only: maintenanceSteps }],
    workflowExecutionTimeout: '30m',
  });
  const seconds = (performance.now() - started) / 1000;
  const events = await fetchEvents(stack.temporal, workflowId);
  const scheduled = new Map<string, { type: string; at: number }>();
  const steps: RunCost['steps'] = {};
  const time = (e: (typeof events)[number]) => Number(String(e.eventTime?.seconds ?? 0)) * 1000 + (e.eventTime?.nanos ?? 0) / 1e6;
  for (const e of events) {
    const type = typeName(e.eventType);
    if (type === 'ActivityTaskScheduled')
      scheduled.set(String(e.eventId), { type: e.activityTaskScheduledEventAttributes?.activityType?.name ?? '?', at: time(e) });
    if (type === 'ActivityTaskCompleted') {
      const attributes = e.activityTaskCompletedEventAttributes;
      const s = scheduled.get(String(attributes?.scheduledEventId));
      if (s === undefined) continue;
      const step = (steps[s.type] ??= { calls: 0, seconds: 0, last: undefined });
      step.calls += 1;
      step.seconds += (time(e) - s.at) / 1000;
      const payload = attributes?.result?.payloads?.[0]?.data;
      step.last = payload === undefined || payload === null ? undefined : (JSON.parse(Buffer.from(payload).toString('utf8')) as unknown);
    }
  }
  const cost = historyCost(events);
  const { unfinished, ...counts } = result;
  return { seconds, report: counts, steps, events: cost.events, actions: cost.actions, unfinished };
}

/**
 * Where the bridge's time goes at scale: EXPLAIN ANALYZE of its upsert statement and of the
 * bare INSERT for the largest channel, each plan node's own time summed by what the node is
 * for (recipients, mutes, registrations, the insert itself…), and what the bridge's remaining
 * gap to the bare INSERT is made of. What JIT would add is measured on the way
 * (scale-bridge-jit.ts).
 */
import { sql } from 'slonik';
import { type DatabasePool, pendingUpsert } from '../../src/testing.js';
import { explain, type PlanNode } from '../explain-analyze.js';
import type { Section } from '../report.js';
import { nextMessageId } from '../seed.js';
import { setupProse } from '../setup-prose.js';
import { recipientRegistrationIds } from './scale-bridge.js';
import { reportJit } from './scale-bridge-jit.js';
import type { SizedChannel } from './scale-world.js';

/**
 * EXPLAIN ANALYZE of the bridge's upsert and of the bare INSERT for the largest channel, each
 * in a transaction rolled back: the time of each plan node (less its children's), summed by
 * what the node is for. Instrumentation slows every node, so the shares are what to read.
 */
export async function explainBridge(pool: DatabasePool, section: Section, channel: SizedChannel): Promise<void> {
  const channelRow = { id: channel.channelId, server_id: channel.serverId };
  const events = [{ messageId: nextMessageId(), channelId: channel.channelId, authorId: channel.authorId, createdAt: new Date() }];
  const upsert = sql.unsafe`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${pendingUpsert(channelRow, events)}`;
  // As the bridge runs it: JIT off (recordChannelEvents). What JIT would cost it is measured apart.
  const ours = await explain(pool, upsert, categorize, { jit: 'off' });
  await reportJit(pool, section, channel, upsert);
  const ids = await recipientRegistrationIds(pool, channel);
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
    setupProse('scale-bridge-gap', {
      members: channel.members.toLocaleString('en-US'),
      oursMs: ours.total.toFixed(0),
      bareMs: bare.total.toFixed(0),
      gap: gap.map(([c, ms]) => `${c} ${ms.toFixed(0)} ms`).join(', '),
    }),
  );
}

const pct = (part: number, whole: number) => `${Math.round((100 * part) / whole)}%`;

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

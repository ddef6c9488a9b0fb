/**
 * EXPLAIN ANALYZE read for where a statement's time goes: run in a transaction rolled back
 * (a writing statement leaves the rows as they were), each plan node's own time (its inclusive
 * time less its children's, a CTE charged where it is defined) summed by a category the caller
 * gives each node. Instrumentation slows every node, so the shares are what to read.
 */
import { sql } from 'slonik';
import type { DatabasePool } from '../src/testing.js';
import { inRolledBackTransaction } from './rolled-back.js';

export interface PlanNode {
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

export interface Explained {
  readonly byCategory: Record<string, number>;
  readonly total: number;
  readonly planningMs: number;
  readonly nodes: { node: string; ms: number; category: string }[];
}

/** PostgreSQL settings for one EXPLAIN's transaction (`SET LOCAL`). */
export type PlannerSettings = Readonly<Record<string, string>>;

export interface ExplainOutput {
  Plan: PlanNode;
  'Planning Time': number;
  'Execution Time': number;
  Triggers?: { 'Trigger Name': string; Time: number }[];
  JIT?: { Functions: number; Options: Record<string, boolean>; Timing: { Total: number } };
}

/** `statement` (an EXPLAIN ANALYZE … FORMAT JSON) run in a transaction rolled back, under `settings`. */
export async function explainOutput(pool: DatabasePool, statement: ReturnType<typeof sql.unsafe>, settings: PlannerSettings): Promise<ExplainOutput> {
  const plan = await inRolledBackTransaction(pool, async (tx) => {
    for (const [name, value] of Object.entries(settings)) await tx.query(sql.unsafe`SELECT set_config(${name}, ${value}, true)`);
    return tx.oneFirst(statement);
  });
  return ((typeof plan === 'string' ? JSON.parse(plan) : plan) as [ExplainOutput])[0];
}

export async function explain(
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

/**
 * What JIT compilation would cost the bridge's upsert, which turns it off: its EXPLAIN ANALYZE
 * with PostgreSQL's default JIT thresholds, and past the optimize and inline thresholds.
 */
import type { sql } from 'slonik';
import type { DatabasePool } from '../../src/testing.js';
import { explainOutput, type ExplainOutput, type PlanNode } from '../explain-analyze.js';
import type { Section } from '../report.js';
import { setupProse } from '../setup-prose.js';
import type { SizedChannel } from './scale-world.js';

/**
 * What JIT compilation would add to the bridge's upsert, which turns it off: with PostgreSQL's
 * default thresholds, and once the statement's estimated cost passes jit_optimize_above_cost
 * and jit_inline_above_cost (as it does for a larger channel; here the thresholds are lowered
 * to just under this statement's cost instead).
 */
export async function reportJit(pool: DatabasePool, section: Section, channel: SizedChannel, upsert: ReturnType<typeof sql.unsafe>): Promise<void> {
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
    setupProse('scale-jit', {
      members: channel.members.toLocaleString('en-US'),
      cost: cost.toFixed(0),
      withDefaultThresholds: describe(byDefault),
      membersForThresholds: Math.ceil((500_000 / cost) * channel.members).toLocaleString('en-US'),
      pastThresholds: describe(optimized),
      executionMs: byDefault['Execution Time'].toFixed(0),
    }),
  );
}

/**
 * Maintenance at scale: the maintenance workflow as the tree has it (started as its Schedule
 * starts it, on a worker process) over a million registrations — the session sweep, the 90-day
 * and 7-day rules, the ledger, healing — one run, and the session sweep's full pass over as
 * many runs as it takes; each rule beside one bare DELETE over its whole table, rolled back.
 */
import { sql } from 'slonik';
import { type MaintenanceReport, type MaintenanceStep, maintenanceWorkflowType } from '../../src/testing.js';
import { fetchEvents, historyCost, typeName } from '../history.js';
import type { Report, Section } from '../report.js';
import { inRolledBackTransaction } from '../rolled-back.js';
import { setupProse } from '../setup-prose.js';
import type { BenchStack, RunningApps } from '../stack.js';
import type { ScaleWorld } from './scale-world.js';

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

export async function measureMaintenance(stack: BenchStack, report: Report, section: Section, world: ScaleWorld, maxRuns: number): Promise<void> {
  const { pool } = stack;
  /** Seconds `statement` takes, in a transaction rolled back. */
  const bare = (statement: ReturnType<typeof sql.unsafe>) =>
    inRolledBackTransaction(pool, async (tx) => {
      const t = performance.now();
      await tx.query(statement);
      return (performance.now() - t) / 1000;
    });
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
  section.setup.push(setupProse('scale-maintenance', { steps: maintenanceSteps.join(', '), maxRuns }));
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

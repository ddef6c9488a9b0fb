/**
 * `--check`: the model's prediction for what the bench itself ran, beside what it measured —
 * how far the model can be trusted, from the same results file.
 */
import type { HistoryCost, ResultsFile } from './bench-results.js';
import { wakesPerSecond, type Assumptions } from './model.js';

export interface CheckRow {
  readonly what: string;
  readonly predicted: number;
  readonly measured: number;
  readonly unit: string;
}

/**
 * The model's prediction for what the bench itself ran, beside what it measured: the busy
 * channel's wakes and `pending` signals per device (the coalescing formula), and the fan-out's
 * time to the last wake, taking the engine ceiling's workflow tasks per second as the limit.
 */
export function checkAgainstBench(results: ResultsFile | undefined, assumptions: Assumptions): CheckRow[] {
  const rows: CheckRow[] = [];
  const section = (id: string) => results?.sections?.find((s) => s.id === id);
  const live = section('live-traffic')?.details;
  const busyDevices = live?.busyDevices as { wakes: number; signals: Record<string, number> }[] | undefined;
  const messages = live?.messages as { busy: number } | undefined;
  if (busyDevices !== undefined && busyDevices.length > 0 && messages !== undefined) {
    // One message a second: λ = 1; the first message wakes at once, then the formula's rate.
    const predicted = 1 + (messages.busy - 1) * wakesPerSecond(1, assumptions.minIntervalSeconds);
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
    rows.push({
      what: `busy channel (1 message/s for ${messages.busy} s): wakes per device`,
      predicted,
      measured: median(busyDevices.map((d) => d.wakes)),
      unit: 'wakes',
    });
    rows.push({
      what: 'busy channel: `pending` signals per device (one per cycle)',
      predicted,
      measured: median(busyDevices.map((d) => d.signals.pending ?? 0)),
      unit: 'signals',
    });
  }
  for (const [id, engine] of [
    ['fan-out', ''],
    ['fan-out-server', ', real Temporal server'],
  ] as const) {
    const fanOut = section(id)?.details;
    const runs = fanOut?.runs as
      | {
          devices: number;
          ours: { lastMs: number | null; completed?: boolean };
          ceiling: { lastMs: number | null; received: number; completed?: boolean };
        }[]
      | undefined;
    const history = fanOut?.firstWakeHistory as { ours: HistoryCost; ceiling: HistoryCost } | undefined;
    // The workflow tasks up to the wake: a task a fired timer caused (the interval's) comes after it.
    const tasksToWake = (c: HistoryCost) => Math.max(1, c.workflowTasks - (c.byType?.TimerFired ?? 0));
    for (const run of runs ?? []) {
      // A run that missed its deadline has no time to the last wake to compare.
      if (
        history === undefined ||
        run.ours.lastMs === null ||
        run.ceiling.lastMs === null ||
        run.ours.completed === false ||
        run.ceiling.completed === false
      )
        continue;
      // Engine-bound: our first wakes take as many workflow tasks per second as the ceiling's did.
      const ceilingTasksPerSecond = (run.ceiling.received * tasksToWake(history.ceiling)) / (run.ceiling.lastMs / 1000);
      const predicted = (run.devices * tasksToWake(history.ours)) / ceilingTasksPerSecond;
      rows.push({
        what: `fan-out to ${run.devices.toLocaleString('en-US')} devices${engine}: message → last wake (engine-bound on workflow tasks)`,
        predicted,
        measured: run.ours.lastMs / 1000,
        unit: 's',
      });
    }
  }
  return rows;
}

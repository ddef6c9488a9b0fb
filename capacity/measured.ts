/**
 * The measured costs the model scales, read from a results file of `make bench`: each field
 * from the section that measured it, else from measuredDefaults (capacity/inputs.json,
 * dated there); and, for the report, where each came from.
 */
import type { HistoryCost, ResultsFile } from './bench-results.js';
import type { CycleCost, Measured } from './model.js';

/** PostgreSQL's writes as the scale section records them (older files: `commits`, reads included). */
type Writes = { walSyncs?: number; commits?: number; rowsWritten: number; walBytes: number };

const cycleOf = (c: HistoryCost): CycleCost => ({
  events: c.events,
  actions: c.actions,
  workflowTasks: c.workflowTasks,
  signals: Object.values(c.signals ?? {}).reduce((a, b) => a + b, 0),
  timersFired: c.byType?.TimerFired ?? 0,
});

/** The measured costs from a results file, each field from its section or the default; and where each came from. */
export function measuredFrom(results: ResultsFile | undefined, defaults: Measured): { measured: Measured; sources: Record<string, string> } {
  const sources: Record<string, string> = {};
  const section = (id: string) => results?.sections?.find((s) => s.id === id);
  const take = <T>(
    field: string,
    id: string,
    read: (details: Record<string, unknown>, figures: NonNullable<ResultsFile['sections']>[number]['figures']) => T | undefined,
    fallback: T,
  ): T => {
    const s = section(id);
    try {
      const value = s === undefined ? undefined : read(s.details ?? {}, s.figures ?? []);
      if (value !== undefined && !JSON.stringify(value).includes('null')) {
        sources[field] = `${id} (${s!.measuredAt ?? results?.at ?? 'undated'})`;
        return value;
      }
    } catch {
      // fall through to the default
    }
    // measuredDefaults: the section of capacity/inputs.json that holds the value and its run.
    sources[field] = 'default (see measuredDefaults)';
    return fallback;
  };
  const m = defaults;
  const perWake = (d: Record<string, unknown>) => d.perWake as { quiet: HistoryCost; busy: HistoryCost } | undefined;
  const churn = (d: Record<string, unknown>) =>
    d.churn as
      | {
          reregistration: { cost: HistoryCost; bytes: number; writes: Writes };
          firstRegistration: { cost: HistoryCost; bytes: number };
          wakeCycle: { cost: HistoryCost; bytes: number; writes?: Writes };
        }
      | undefined;
  const figure = (figures: readonly { name: string; value: number | null }[] | undefined, starts: string) =>
    figures?.find((f) => f.name.startsWith(starts))?.value ?? undefined;
  const measured: Measured = {
    quietCycle: take('quietCycle', 'live-traffic', (d) => (perWake(d) ? cycleOf(perWake(d)!.quiet) : undefined), m.quietCycle),
    busyCycle: take('busyCycle', 'live-traffic', (d) => (perWake(d) ? cycleOf(perWake(d)!.busy) : undefined), m.busyCycle),
    bytesPerEvent: take(
      'bytesPerEvent',
      'scale-churn',
      (d) => (churn(d) ? churn(d)!.wakeCycle.bytes / churn(d)!.wakeCycle.cost.events : undefined),
      m.bytesPerEvent,
    ),
    registration: take(
      'registration',
      'scale-churn',
      (d) => (churn(d) ? { ...cycleOf(churn(d)!.firstRegistration.cost), bytes: churn(d)!.firstRegistration.bytes } : undefined),
      m.registration,
    ),
    reregistration: take(
      'reregistration',
      'scale-churn',
      (d) => {
        const r = churn(d)?.reregistration;
        return r === undefined
          ? undefined
          : {
              ...cycleOf(r.cost),
              bytes: r.bytes,
              pgCommits: r.writes.walSyncs ?? r.writes.commits ?? m.reregistration.pgCommits,
              pgRows: r.writes.rowsWritten,
              walBytes: r.writes.walBytes,
            };
      },
      m.reregistration,
    ),
    wakeWrites: take(
      'wakeWrites',
      'scale-churn',
      (d) => {
        const w = churn(d)?.wakeCycle.writes;
        return w === undefined || w.walSyncs === undefined ? undefined : { pgCommits: w.walSyncs, pgRows: w.rowsWritten, walBytes: w.walBytes };
      },
      m.wakeWrites,
    ),
    bridgeWalBytesPerRow: take(
      'bridgeWalBytesPerRow',
      'scale',
      (d) => {
        const runs = d.bridge as { walBytesPerRow?: { created: number; updated: number } }[] | undefined;
        const last = runs?.at(-1)?.walBytesPerRow;
        return last === undefined ? undefined : (last.created + last.updated) / 2;
      },
      m.bridgeWalBytesPerRow,
    ),
    workerBaseRssMiB: take(
      'workerBaseRssMiB',
      'worker-memory',
      (d) => (d.samples as { rssMiB: number }[] | undefined)?.[0]?.rssMiB,
      m.workerBaseRssMiB,
    ),
    workerRssMiBPerCachedWorkflow: take(
      'workerRssMiBPerCachedWorkflow',
      'worker-memory',
      (d) => {
        const samples = d.samples as { cached: number; rssMiB: number }[] | undefined;
        if (samples === undefined || samples.length < 2) return undefined;
        const [first, last] = [samples[0]!, samples.at(-1)!];
        return (last.rssMiB - first.rssMiB) / (last.cached - first.cached);
      },
      m.workerRssMiBPerCachedWorkflow,
    ),
    maintenanceRun: take(
      'maintenanceRun',
      'scale',
      (d) => {
        const first = (d.maintenance as { runs?: { actions: number; events: number }[] } | undefined)?.runs?.[0];
        return first === undefined ? undefined : { actions: first.actions, events: first.events };
      },
      m.maintenanceRun,
    ),
    mibPerMillion: take(
      'mibPerMillion',
      'scale',
      (_, figures) => {
        const [registrations, pendingRows, ledgerRows] = ['push_registrations:', 'push_pending:', 'push_processed_events:'].map((p) =>
          figure(figures, p),
        );
        return registrations === undefined || pendingRows === undefined || ledgerRows === undefined
          ? undefined
          : { registrations, pendingRows, ledgerRows };
      },
      m.mibPerMillion,
    ),
    natsEventBytes: m.natsEventBytes,
  };
  sources.natsEventBytes = 'default (see measuredDefaults)';
  return { measured, sources };
}

/** A DM's message → wake latency as `make bench` measured it, for the report (not scaled by the model). */
import type { ResultsFile } from './bench-results.js';

export interface DmLatencyRow {
  /** The engine and the moment: "dev server, idle", "real server, during a fan-out to 10,000 devices"… */
  readonly what: string;
  /** Seconds, with the bridge's pacing of server channels (ours) and without it (reference). */
  readonly p50: { readonly paced: number | null; readonly reference: number | null };
  readonly p99: { readonly paced: number | null; readonly reference: number | null };
  /** When the bench ran it several times: the paced p99's extremes over the runs. */
  readonly p99Spread?: { readonly runs: number; readonly min: number; readonly max: number };
}

/**
 * A DM's message → wake latency from the `dm-latency` sections: not a cost the model
 * scales, but what a deployment's callers can expect while channels fan out or a channel is
 * lively, next to the same run without the pacing (and, over repeated runs, the p99's spread).
 */
export function dmLatencyFromBench(results: ResultsFile | undefined): DmLatencyRow[] {
  const rows: DmLatencyRow[] = [];
  for (const [id, engine] of [
    ['dm-latency', 'dev server'],
    ['dm-latency-server', 'real server'],
  ] as const) {
    const figures = results?.sections?.find((s) => s.id === id)?.figures ?? [];
    const moments = [...new Set(figures.map((f) => /^(.*): DM message → wake, p(50|99)$/.exec(f.name)?.[1]).filter((m) => m !== undefined))];
    for (const moment of moments) {
      const pair = (q: string) => {
        const f = figures.find((x) => x.name === `${moment}: DM message → wake, ${q}`);
        return { paced: f?.value ?? null, reference: f?.reference?.value ?? null };
      };
      const spread = figures.find((x) => x.name === `${moment}: DM message → wake, p99`)?.spread;
      rows.push({
        what: `${engine}, ${moment}`,
        p50: pair('p50'),
        p99: pair('p99'),
        ...(spread?.value == null || spread.runs < 2 ? {} : { p99Spread: { runs: spread.runs, ...spread.value } }),
      });
    }
  }
  return rows;
}

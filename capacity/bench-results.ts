/**
 * The results `make bench` writes (bench/results.ts), as far as the capacity command reads
 * them: sections by id, each with its figures and details. The committed summary
 * (bench/results/summary.json, the default) keeps of the details what this command reads; a
 * run's full output (bench/results/latest.json) has the same form. Every reader treats a
 * section or field as possibly missing — files from older runs lack what later runs added.
 */
import { existsSync, readFileSync } from 'node:fs';

export interface ResultsFile {
  readonly at?: string;
  readonly sections?: readonly {
    readonly id: string;
    readonly measuredAt?: string;
    readonly figures?: readonly {
      readonly name: string;
      readonly value: number | null;
      readonly reference?: { readonly name: string; readonly value: number | null };
      /** Over repeated runs (`BENCH_REPEAT`): `value` is their median, these the extremes. */
      readonly spread?: { readonly runs: number; readonly value: { readonly min: number; readonly max: number } | null };
    }[];
    readonly details?: Record<string, unknown>;
  }[];
}

/** A history's cost as the bench records it: counts, signals by name, events by type. */
export type HistoryCost = {
  events: number;
  actions: number;
  workflowTasks: number;
  signals: Record<string, number>;
  byType: Record<string, number>;
};

/** The results in `file`, or undefined when there is none (then every measured cost is a default). */
export function readResults(file: string): ResultsFile | undefined {
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as ResultsFile) : undefined;
}

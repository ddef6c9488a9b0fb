/**
 * The results of `make bench`, as two files of one format:
 *
 *   - `bench/results/latest.json`, the full output of the last run — every figure, table and
 *     detail (series, per-device counts, histories) — a build artefact, not committed;
 *   - `bench/results/summary.json`, committed: the same without the details nobody reads back,
 *     small enough to review in a diff. docs/benchmarks.md is rendered from it, the capacity
 *     tool (capacity/) reads its measured costs from it, and a partial run (`BENCH_ONLY`)
 *     keeps from it the sections it did not measure.
 *
 * A summary keeps of a section's details only what those readers take (`keptDetails`); the
 * rest of a section — figures, tables, plots, how its setup prose is filled in — is whole.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../src/testing.js';
import type { SetupProse } from './setup-prose.js';
import type { Environment } from './stack.js';

export interface Figure {
  /** What was measured, for the table. */
  readonly name: string;
  /** null: not measured (the run did not get that far); say why in `note`. */
  readonly value: number | null;
  readonly unit: string;
  /** The reference measured side by side, in the same unit. */
  readonly reference?: { readonly name: string; readonly value: number | null };
  readonly note?: string;
  /** Also shown in the summary at the top, under this item label (e.g. "1. fan-out"). */
  readonly headline?: string;
  /** Over repeated runs (`BENCH_REPEAT`): `value` and the reference's are medians, these the extremes. */
  readonly spread?: Spread;
}

export interface Spread {
  readonly runs: number;
  readonly value: { readonly min: number; readonly max: number } | null;
  readonly reference?: { readonly min: number; readonly max: number } | null;
  /** Ours ÷ reference, run by run. */
  readonly ratio?: { readonly min: number; readonly max: number } | null;
}

export interface Table {
  readonly title: string;
  readonly header: readonly string[];
  readonly rows: readonly (readonly (string | number)[])[];
}

export interface Plot {
  /** The SVG's file name under docs/benchmarks/. */
  readonly file: string;
  readonly caption: string;
}

export interface Section {
  readonly id: string;
  readonly title: string;
  /** The `BENCH_ONLY` name of the measurement that wrote it (one measurement may write several sections). */
  readonly measurement: string;
  /** When and at which scale it was measured: this run, or an earlier one whose section a partial run kept. */
  readonly measuredAt?: string;
  readonly scale?: string;
  /** How it was measured: setup files and their values, rendered when the report is written. */
  readonly setup: SetupProse[];
  readonly figures: Figure[];
  readonly tables: Table[];
  readonly plots: Plot[];
  /** Anything else worth keeping in the full output (series, per-device counts…). */
  readonly details: Record<string, unknown>;
  error?: string;
}

export interface Results {
  /** When the run finished. */
  readonly at: string;
  readonly durationSeconds: number;
  readonly scale: string;
  /** What the run measured (`BENCH_ONLY`, or every measurement); its other sections were kept from earlier runs. */
  readonly measurements: readonly string[];
  /** The machine and the engines' versions; absent when the run failed before starting a stack. */
  readonly environment?: Environment;
  readonly loadAverage: { readonly start: number; readonly end: number };
  readonly sections: readonly Section[];
}

export const resultsDir = path.join(projectRoot, 'bench', 'results');
/** The last run's full output: a build artefact (.gitignore). */
export const fullResultsFile = path.join(resultsDir, 'latest.json');
/** What docs/benchmarks.md and the capacity tool read: committed. */
export const summaryFile = path.join(resultsDir, 'summary.json');

/** The results in `file`, or undefined when there is none; a file that is not a results file is an error naming it. */
export function readResults(file: string): Results | undefined {
  if (!existsSync(file)) return undefined;
  let results: Results;
  try {
    results = JSON.parse(readFileSync(file, 'utf8')) as Results;
  } catch (error) {
    throw new Error(`${path.relative(projectRoot, file)}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  if (typeof results.at !== 'string' || !Array.isArray(results.sections))
    throw new Error(`${path.relative(projectRoot, file)}: not a results file of make bench (no "at" or no "sections")`);
  return results;
}

export function writeResults(file: string, results: Results): void {
  writeFileSync(file, resultsJson(results) + '\n');
}

type Details = Record<string, unknown>;
type Reader = (details: Details) => Details;

/** The fields of `value` named, those it has. */
function pick(value: unknown, keys: readonly string[]): Details {
  const from = (value ?? {}) as Details;
  return Object.fromEntries(keys.filter((k) => from[k] !== undefined).map((k) => [k, from[k]]));
}

/** A list's entries, each cut down by `each`; undefined stays undefined. */
const eachOf = (list: unknown, each: (entry: unknown) => Details): Details[] | undefined => (Array.isArray(list) ? list.map(each) : undefined);

/** A fan-out's runs as the capacity tool's `--check` reads them: the time to the last wake, ours and the ceiling's. */
const fanOut: Reader = (d) => ({
  runs: eachOf(d.runs, (run) => ({
    ...pick(run, ['devices']),
    ours: pick((run as Details).ours, ['expected', 'received', 'completed', 'lastMs']),
    ceiling: pick((run as Details).ceiling, ['expected', 'received', 'completed', 'lastMs']),
  })),
  ...pick(d, ['firstWakeHistory']),
});

/**
 * What a summary keeps of each section's details: what capacity/ reads (measured.ts: the
 * costs the model scales; bench-check.ts: the bench's own runs it predicts). Figures, tables
 * and plots are kept whole, so a section not named here keeps no details.
 */
const keptDetails: Readonly<Record<string, Reader>> = {
  'fan-out': fanOut,
  'fan-out-server': fanOut,
  'live-traffic': (d) => ({
    ...pick(d, ['perWake', 'messages']),
    busyDevices: eachOf(d.busyDevices, (device) => pick(device, ['wakes', 'signals'])),
  }),
  'worker-memory': (d) => ({ samples: eachOf(d.samples, (sample) => pick(sample, ['cached', 'rssMiB'])) }),
  'scale-churn': (d) => ({ churn: pick(d.churn, ['reregistration', 'firstRegistration', 'wakeCycle']) }),
  scale: (d) => ({
    bridge: eachOf(d.bridge, (run) => pick(run, ['members', 'rows', 'walBytesPerRow'])),
    maintenance: { runs: eachOf((d.maintenance as Details | undefined)?.runs, (run) => pick(run, ['actions', 'events'])) },
  }),
};

/** `results` as the summary holds them: each section's details cut down to what is read back. */
export function summaryOf(results: Results): Results {
  return { ...results, sections: results.sections.map((section) => ({ ...section, details: keptOf(section) })) };
}

function keptOf(section: Section): Details {
  const keep = keptDetails[section.id];
  // Through JSON: without the fields a reader found missing (an older or failed run's).
  return keep === undefined ? {} : (JSON.parse(JSON.stringify(keep(section.details))) as Details);
}

/** The fields of a section in the order a reader wants them: what it is, its figures, then how it was measured. */
function ordered(section: Section): Section {
  const { id, title, measurement, measuredAt, scale, error, figures, tables, plots, setup, details } = section;
  return { id, title, measurement, measuredAt, scale, error, figures, tables, plots, setup, details };
}

/**
 * JSON that reads well in a diff: a figure, a table row, a plot and a setup file with its
 * values take one line each (a new run changes the lines of the figures it changed); any other
 * value that fits in `width` characters is written on one line, a longer one an entry per line.
 */
function resultsJson(results: Results): string {
  const oneLine = (at: readonly (string | number)[]) =>
    (at.length === 4 && at[0] === 'sections' && ['figures', 'plots', 'setup'].includes(String(at[2]))) ||
    (at.length === 6 && at[2] === 'tables' && at[4] === 'rows');
  return compactJson({ ...results, sections: results.sections.map(ordered) }, [], '', 120, oneLine);
}

/** `value` as JSON, on one line where `oneLine(path)` says so or it fits in `width` characters with its indentation. */
function compactJson(
  value: unknown,
  at: readonly (string | number)[],
  indent: string,
  width: number,
  oneLine: (at: readonly (string | number)[]) => boolean,
): string {
  const flat = JSON.stringify(value);
  if (value === null || typeof value !== 'object' || indent.length + flat.length <= width || oneLine(at)) return flat;
  const inner = `${indent}  `;
  if (Array.isArray(value)) return `[\n${value.map((v, i) => inner + compactJson(v, [...at, i], inner, width, oneLine)).join(',\n')}\n${indent}]`;
  const entries = Object.entries(value).filter(([, v]) => v !== undefined);
  const entry = ([k, v]: [string, unknown]) => `${JSON.stringify(k)}: ${compactJson(v, [...at, k], inner, width - k.length - 4, oneLine)}`;
  return `{\n${entries.map((e) => inner + entry(e)).join(',\n')}\n${indent}}`;
}

/**
 * What a benchmark run found, collected as it runs (`section`, `figure`, `plot`), merged over
 * repeated runs, and written (`write`): the full output and the summary under bench/results/
 * (bench/results.ts), docs/benchmarks.md from the summary (bench/report-markdown.ts) and the
 * SVG plots under docs/benchmarks/.
 */
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../src/testing.js';
import { benchmarksMarkdown, ratio, withUnit } from './report-markdown.js';
import { fullResultsFile, resultsDir, summaryFile, summaryOf, writeResults, type Figure, type Results, type Section } from './results.js';
import type { BenchSettings } from './settings.js';
import type { Environment } from './stack.js';
import { median, round } from './stats.js';

export type { Figure, Section, Spread, Table } from './results.js';

const docsDir = path.join(projectRoot, 'docs');
const plotsDir = path.join(docsDir, 'benchmarks');

export class Report {
  readonly sections: Section[] = [];
  /** Which run of a repeated bench this is, from 1. */
  readonly run: number;
  readonly #svgs = new Map<string, string>();

  constructor(run = 1) {
    this.run = run;
  }

  section(id: string, title: string, measurement: string = id): Section {
    const section: Section = { id, title, measurement, setup: [], figures: [], tables: [], plots: [], details: {} };
    this.sections.push(section);
    process.stdout.write(`\n== ${title}\n`);
    return section;
  }

  /**
   * The runs of a repeated benchmark as one report: each section of the last run, each of its
   * figures the median over the runs that measured it (matched by name and reference), with
   * the spread of its value, its reference's and their ratio; the runs' details kept under
   * `repeats`.
   */
  static merged(runs: readonly Report[]): Report {
    const last = runs.at(-1)!;
    if (runs.length === 1) return last;
    const merged = new Report();
    for (const section of last.sections) {
      const same = runs.map((r) => r.sections.find((s) => s.id === section.id)).filter((s) => s !== undefined);
      const key = (f: Figure) => `${f.name}\u0000${f.reference?.name ?? ''}`;
      const figures = section.figures.map((figure): Figure => {
        const all = same.flatMap((s) => s.figures.filter((f) => key(f) === key(figure)));
        const values = all.map((f) => f.value).filter((v): v is number => v !== null && Number.isFinite(v));
        const refs = all.map((f) => f.reference?.value ?? null).filter((v): v is number => v !== null && Number.isFinite(v));
        const ratios = all.map(ratio).filter((v): v is number => v !== null && Number.isFinite(v));
        const extremes = (xs: number[]) => (xs.length === 0 ? null : { min: Math.min(...xs), max: Math.max(...xs) });
        return {
          ...figure,
          value: values.length === 0 ? null : median(values),
          ...(figure.reference === undefined ? {} : { reference: { ...figure.reference, value: refs.length === 0 ? null : median(refs) } }),
          spread: {
            runs: all.length,
            value: extremes(values),
            ...(figure.reference === undefined ? {} : { reference: extremes(refs), ratio: extremes(ratios) }),
          },
        };
      });
      merged.sections.push({ ...section, figures, details: { ...section.details, repeats: same.map((s) => s.details) } });
    }
    for (const run of runs) for (const [file, svg] of run.#svgs) merged.#svgs.set(file, svg);
    return merged;
  }

  /** Records a figure and prints it. */
  figure(section: Section, figure: Figure): void {
    const clean: Figure = {
      ...figure,
      value: figure.value === null ? null : round(figure.value),
      ...(figure.reference === undefined
        ? {}
        : { reference: { ...figure.reference, value: figure.reference.value === null ? null : round(figure.reference.value) } }),
    };
    section.figures.push(clean);
    const ref =
      clean.reference === undefined
        ? ''
        : `   vs ${clean.reference.name}: ${withUnit(clean.reference.value, clean.unit)}   ratio ${showRatio(clean)}`;
    process.stdout.write(`  ${clean.name}: ${withUnit(clean.value, clean.unit)}${ref}${clean.note ? `   (${clean.note})` : ''}\n`);
  }

  plot(section: Section, file: string, caption: string, svg: string): void {
    this.#svgs.set(file, svg);
    section.plots.push({ file, caption });
  }

  /**
   * Writes the results; sections in `order` (by id), whatever order they ran in. A partial run
   * (`BENCH_ONLY`) keeps the sections of the measurements it did not run from `previous` (the
   * summary before it), marked with the date and scale they were measured at, so that the
   * summary stays whole (the capacity tool reads several sections of it).
   */
  write(
    run: {
      readonly startedAt: Date;
      readonly finishedAt: Date;
      readonly environment: Environment | undefined;
      readonly settings: BenchSettings;
      readonly order: readonly string[];
      readonly loadAverage: { readonly start: number; readonly end: number };
    },
    previous: Results | undefined,
  ): void {
    const measuredAt = run.finishedAt.toISOString();
    const fresh = this.sections.map((s): Section => ({ ...s, measuredAt, scale: run.settings.scale }));
    const ran = new Set<string>(run.settings.only);
    const kept = (previous?.sections ?? []).filter((s) => !ran.has(s.measurement) && !fresh.some((f) => f.id === s.id));
    const rank = (s: Section) => (run.order.indexOf(s.id) + run.order.length + 1) % (run.order.length + 1);
    const sections = [...fresh, ...kept].sort((a, b) => rank(a) - rank(b));
    mkdirSync(resultsDir, { recursive: true });
    mkdirSync(plotsDir, { recursive: true });
    const keptPlots = new Set(kept.flatMap((s) => s.plots.map((p) => p.file)));
    for (const old of readdirSync(plotsDir).filter((f) => f.endsWith('.svg') && !keptPlots.has(f))) rmSync(path.join(plotsDir, old));
    for (const [file, svg] of this.#svgs) writeFileSync(path.join(plotsDir, file), svg);
    const results: Results = {
      at: measuredAt,
      durationSeconds: Math.round((run.finishedAt.getTime() - run.startedAt.getTime()) / 1000),
      scale: run.settings.scale,
      measurements: [...run.settings.only],
      ...(run.environment === undefined ? {} : { environment: run.environment }),
      loadAverage: run.loadAverage,
      sections,
    };
    const summary = summaryOf(results);
    writeResults(fullResultsFile, results);
    writeResults(summaryFile, summary);
    writeFileSync(path.join(docsDir, 'benchmarks.md'), benchmarksMarkdown(summary));
  }
}

function showRatio(f: Figure): string {
  const r = ratio(f);
  return r === null ? '—' : `${r}×`;
}

/**
 * What a benchmark run found, and how it is written: `bench/results/latest.json` (every
 * figure, every detail, the environment) and `docs/benchmarks.md` (a table per measurement,
 * each figure next to its reference from the same run and their ratio, plus the SVG plots
 * under `docs/benchmarks/`).
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../src/paths.js';
import { measurementNames, type BenchSettings } from './settings.js';
import type { Environment } from './stack.js';
import { setupChapter } from './setup-prose.js';
import { median, round } from './stats.js';

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

export interface Section {
  readonly id: string;
  readonly title: string;
  /** The `BENCH_ONLY` name of the measurement that wrote it (one measurement may write several sections). */
  readonly measurement: string;
  /** When and at which scale it was measured: this run, or an earlier one whose section a partial run kept. */
  readonly measuredAt?: string;
  readonly scale?: string;
  /** How it was measured: sentences for the docs. */
  readonly setup: string[];
  readonly figures: Figure[];
  readonly tables: Table[];
  readonly plots: { readonly file: string; readonly caption: string }[];
  /** Anything else worth keeping in the JSON (series, per-device counts…). */
  readonly details: Record<string, unknown>;
  error?: string;
}

const docsDir = path.join(projectRoot, 'docs');

/** Chapters of docs/benchmarks.md that no run measures (bench/setup/chapters/), each after the section it belongs to. */
const chapters: readonly { readonly after: readonly string[]; readonly title: string; readonly file: string }[] = [
  { after: ['dm-latency-server', 'dm-latency'], title: 'How the pacer was tuned', file: 'pacing-tuning' },
];
const plotsDir = path.join(docsDir, 'benchmarks');
const resultsDir = path.join(projectRoot, 'bench', 'results');

export class Report {
  readonly sections: Section[] = [];
  readonly #svgs = new Map<string, string>();

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
   * (`BENCH_ONLY`) keeps the sections of the measurements it did not run from the previous
   * bench/results/latest.json, marked with the date and scale they were measured at, so that
   * the results file stays whole (the capacity model reads several sections of it).
   */
  write(run: {
    readonly startedAt: Date;
    readonly finishedAt: Date;
    readonly environment: Environment | undefined;
    readonly settings: BenchSettings;
    readonly order: readonly string[];
    readonly loadAverage: { readonly start: number; readonly end: number };
  }): void {
    const measuredAt = run.finishedAt.toISOString();
    const fresh = this.sections.map((s): Section => ({ ...s, measuredAt, scale: run.settings.scale }));
    const ran = new Set<string>(run.settings.only);
    const kept = previousSections().filter((s) => !ran.has(s.measurement) && !fresh.some((f) => f.id === s.id));
    const rank = (s: Section) => (run.order.indexOf(s.id) + run.order.length + 1) % (run.order.length + 1);
    const sections = [...fresh, ...kept].sort((a, b) => rank(a) - rank(b));
    mkdirSync(resultsDir, { recursive: true });
    mkdirSync(plotsDir, { recursive: true });
    const keptPlots = new Set(kept.flatMap((s) => s.plots.map((p) => p.file)));
    for (const old of readdirSync(plotsDir).filter((f) => f.endsWith('.svg') && !keptPlots.has(f))) rmSync(path.join(plotsDir, old));
    for (const [file, svg] of this.#svgs) writeFileSync(path.join(plotsDir, file), svg);
    const partial = run.settings.only.size < measurementNames.length;
    const json = {
      at: measuredAt,
      durationSeconds: Math.round((run.finishedAt.getTime() - run.startedAt.getTime()) / 1000),
      scale: run.settings.scale,
      measurements: [...run.settings.only],
      environment: run.environment,
      loadAverage: run.loadAverage,
      sections: sections.map((s) => ({
        id: s.id,
        title: s.title,
        measurement: s.measurement,
        measuredAt: s.measuredAt,
        scale: s.scale,
        ...(s.error === undefined ? {} : { error: s.error }),
        setup: s.setup,
        figures: s.figures.map((f) => ({ ...f, ratio: ratio(f) })),
        tables: s.tables,
        plots: s.plots.map((p) => `docs/benchmarks/${p.file}`),
        plotCaptions: s.plots.map((p) => p.caption),
        details: s.details,
      })),
    };
    writeFileSync(path.join(resultsDir, 'latest.json'), JSON.stringify(json, null, 2) + '\n');
    writeFileSync(path.join(docsDir, 'benchmarks.md'), this.markdown(run, sections, partial, measuredAt));
  }

  private markdown(run: Parameters<Report['write']>[0], sections: readonly Section[], partial: boolean, measuredAt: string): string {
    const env = run.environment;
    const minutes = ((run.finishedAt.getTime() - run.startedAt.getTime()) / 60_000).toFixed(1);
    const lines: string[] = [];
    lines.push('# Benchmarks', '');
    lines.push(
      `Written by \`make bench\` (bench/run.ts) on ${run.finishedAt.toISOString()} in ${minutes} min, scale \`${run.settings.scale}\`` +
        (partial
          ? ` — **a partial run** (${[...run.settings.only].join(', ')}); the other sections are kept from earlier runs, each marked with its date, and \`make bench\` without \`BENCH_ONLY\` measures them all again.`
          : '.'),
      '',
    );
    if (env !== undefined) {
      lines.push('| environment | |', '| --- | --- |');
      lines.push(`| machine | ${env.cores} × ${env.cpu}, ${env.memoryGiB} GiB, ${env.os} |`);
      lines.push(`| Node | ${env.node} |`);
      lines.push(`| Temporal | ${env.temporalCli} (dev server, SQLite); TypeScript SDK ${env.temporalSdk} |`);
      lines.push(
        `| Temporal server | ${env.temporalServer} (the real server, PostgreSQL persistence, mTLS: the sections marked "real Temporal server") |`,
      );
      lines.push(`| PostgreSQL | ${env.postgres} (fsync on) |`);
      lines.push(`| NATS | ${env.nats} (JetStream, file storage) |`);
      lines.push(
        `| load average (1 min) | ${run.loadAverage.start.toFixed(2)} before the run, ${run.loadAverage.end.toFixed(2)} after it (others' work on the machine skews every timing) |`,
        '',
      );
    }
    lines.push('## How to read', '');
    lines.push(
      'Every figure sits next to a reference measured in the same run on the same machine, and the last',
      'column is ours ÷ reference. For throughput (per second) a ratio below 1 is the share of the',
      'reference we reach; for times, sizes and counts a ratio above 1 is how many times more we spend.',
      'The stack is private and local (.dev/bench): PostgreSQL, NATS JetStream and the Temporal CLI dev',
      'server, whose single SQLite-backed process is far slower than a Temporal cluster, on a',
      'machine whose cores it shares with the api, worker, bridge and the load generator. Read absolute',
      "numbers as this machine's, and the ratios as the finding: where time goes and what each wake",
      'costs. Counts (history events, actions, wakes per device) do not depend on the machine. The',
      'plots are in docs/benchmarks/, every number and series in bench/results/latest.json. Nothing',
      'here is asserted by a test; that crashes lose nothing is the subject of the fault tests',
      '(test/faults), which assert outcomes, never timings. [capacity.md](capacity.md) turns the measured',
      'per-wake, per-registration and per-message costs into what a deployment of a given size needs',
      '(`npm run -s capacity`).',
      '',
    );
    // By item number (1. … 8.), then the rest; stable within an item.
    const item = (f: Figure) => Number(/^(\d+)\./.exec(f.headline ?? '')?.[1] ?? 99);
    const headlines = sections.flatMap((s) => s.figures.filter((f) => f.headline !== undefined)).sort((a, b) => item(a) - item(b));
    if (headlines.length > 0) {
      lines.push('## Summary', '');
      lines.push('| item | measurement | ours | reference | ours ÷ reference |', '| --- | --- | --- | --- | --- |');
      for (const f of headlines)
        lines.push(
          `| ${f.headline} | ${f.name} | ${withUnit(f.value, f.unit)}${spreadOf(f.spread?.value, f.unit)} | ${referenceCell(f)} | ${showRatio(f)} |`,
        );
      lines.push('', 'Each section below has the full table, the setup and the plots.', '');
    }
    for (const section of sections) {
      lines.push(`## ${section.title}`, '');
      const repeated = Math.max(0, ...section.figures.map((f) => f.spread?.runs ?? 0));
      if (repeated > 1)
        lines.push(
          `_Measured ${repeated} times, each on fresh stacks: every figure is the median of the runs, with their spread (min–max) and that of the ratio._`,
          '',
        );
      if (section.measuredAt !== undefined && section.measuredAt !== measuredAt) {
        lines.push(`_Kept from an earlier run: measured ${section.measuredAt}, scale \`${section.scale ?? '?'}\` (environment as then)._`, '');
      }
      if (section.error !== undefined) lines.push(`**Did not complete:** ${section.error}`, '');
      if (section.figures.length > 0) {
        lines.push('| measurement | ours | reference | ours ÷ reference |', '| --- | --- | --- | --- |');
        for (const f of section.figures) {
          lines.push(
            `| ${f.name}${f.note ? ` — ${f.note}` : ''} | ${withUnit(f.value, f.unit)}${spreadOf(f.spread?.value, f.unit)} | ${referenceCell(f)} | ${showRatio(f)} |`,
          );
        }
        lines.push('');
      }
      for (const table of section.tables) {
        lines.push(`${table.title}`, '', `| ${table.header.join(' | ')} |`, `| ${table.header.map(() => '---').join(' | ')} |`);
        for (const row of table.rows) lines.push(`| ${row.map((c) => (typeof c === 'number' ? show(round(c)) : c)).join(' | ')} |`);
        lines.push('');
      }
      for (const plot of section.plots) lines.push(`![${plot.caption}](benchmarks/${plot.file})`, '');
      for (const paragraph of section.setup) lines.push(paragraph, '');
      for (const chapter of chapters) {
        const home = chapter.after.find((id) => sections.some((s) => s.id === id));
        if (home === section.id) lines.push(`## ${chapter.title}`, '', setupChapter(chapter.file), '');
      }
    }
    return lines.join('\n').replace(/\n{3,}/g, '\n\n');
  }
}

function referenceCell(f: Figure): string {
  return f.reference === undefined ? '' : `${withUnit(f.reference.value, f.unit)}${spreadOf(f.spread?.reference, f.unit)} (${f.reference.name})`;
}

/** " (min–max)" of a figure measured in several runs; nothing for one run. */
function spreadOf(range: { readonly min: number; readonly max: number } | null | undefined, unit: string): string {
  return range === undefined || range === null ? '' : ` (${show(round(range.min))}–${show(round(range.max))}${unit === '' ? '' : ` ${unit}`})`;
}

function ratio(f: Figure): number | null {
  if (f.reference === undefined || f.value === null || f.reference.value === null || f.reference.value === 0) return null;
  return round(f.value / f.reference.value);
}

function showRatio(f: Figure): string {
  const r = ratio(f);
  if (r === null) return f.reference === undefined ? '' : '—';
  const range = f.spread?.ratio;
  return range === undefined || range === null ? `${r}×` : `${r}× (${round(range.min)}–${round(range.max)}×)`;
}

/** A value with its unit; a figure not measured has neither. */
function withUnit(value: number | null, unit: string): string {
  return value === null ? 'not measured' : `${show(value)} ${unit}`;
}

function show(value: number | null): string {
  if (value === null) return 'not measured';
  if (!Number.isFinite(value)) return String(value);
  return Math.abs(value) >= 10_000 ? Math.round(value).toLocaleString('en-US') : String(value);
}

/** The sections of the previous results file, as sections (empty when there is none or it does not parse). */
function previousSections(): Section[] {
  const file = path.join(resultsDir, 'latest.json');
  if (!existsSync(file)) return [];
  try {
    const previous = JSON.parse(readFileSync(file, 'utf8')) as {
      at?: string;
      scale?: string;
      sections?: (Omit<Section, 'plots' | 'measurement'> & { plots: string[]; plotCaptions?: string[]; measurement?: string })[];
    };
    return (previous.sections ?? []).map(({ plotCaptions, ...s }) => ({
      ...s,
      figures: s.figures.map(({ ratio: _ratio, ...f }: Figure & { ratio?: unknown }) => f),
      measurement: s.measurement ?? s.id,
      measuredAt: s.measuredAt ?? previous.at,
      scale: s.scale ?? previous.scale,
      plots: s.plots.map((file, i) => ({ file: path.basename(file), caption: plotCaptions?.[i] ?? captionOf(s.id, file) })),
    }));
  } catch {
    return [];
  }
}

/** A kept plot's caption when the results file predates `plotCaptions`: from the markdown it wrote. */
function captionOf(sectionId: string, file: string): string {
  const markdown = path.join(docsDir, 'benchmarks.md');
  const base = path.basename(file);
  if (existsSync(markdown)) {
    const line = readFileSync(markdown, 'utf8')
      .split('\n')
      .find((l) => l.includes(`](benchmarks/${base})`));
    const caption = line === undefined ? undefined : /^!\[(.*)\]\(/.exec(line)?.[1];
    if (caption !== undefined) return caption;
  }
  return `${sectionId}: ${base}`;
}

/**
 * docs/benchmarks.md from a run's results (bench/results/summary.json): the environment, how to
 * read it, the headline figures, then a section per measurement — its table, each figure next
 * to its reference and their ratio, its tables, plots and setup — and the chapters no run
 * measures (bench/setup/chapters/) after the section they belong to. A function of the
 * results and bench/setup/ alone, so the page can be rewritten without a run
 * (`npm run -s bench-report`).
 */
import { measurementNames } from './settings.js';
import type { Figure, Results, Section } from './results.js';
import { renderSetup, setupChapter } from './setup-prose.js';
import { round } from './stats.js';

/** Chapters of docs/benchmarks.md that no run measures (bench/setup/chapters/), each after the section it belongs to. */
const chapters: readonly { readonly after: readonly string[]; readonly title: string; readonly file: string }[] = [
  { after: ['dm-latency-server', 'dm-latency'], title: 'How the pacer was tuned', file: 'pacing-tuning' },
];

export function benchmarksMarkdown(results: Results): string {
  const { environment: env, sections } = results;
  const partial = results.measurements.length < measurementNames.length;
  const lines: string[] = [];
  lines.push('# Benchmarks', '');
  lines.push(
    `Written by \`make bench\` (bench/run.ts) on ${results.at} in ${(results.durationSeconds / 60).toFixed(1)} min, scale \`${results.scale}\`` +
      (partial
        ? ` — **a partial run** (${results.measurements.join(', ')}); the other sections are kept from earlier runs, each marked with its date, and \`make bench\` without \`BENCH_ONLY\` measures them all again.`
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
      `| load average (1 min) | ${results.loadAverage.start.toFixed(2)} before the run, ${results.loadAverage.end.toFixed(2)} after it (others' work on the machine skews every timing) |`,
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
    'plots are in docs/benchmarks/, every figure in bench/results/summary.json, and every series of',
    'the last run in bench/results/latest.json (its full output, not committed). The setup under',
    'each section is how bench/ measures it now; a section kept from an earlier run shows the',
    'numbers of that run, whose setup may have differed in details. Nothing',
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
  for (const section of sections) lines.push(...sectionMarkdown(section, results.at, sections));
  return lines.join('\n').replace(/\n{3,}/g, '\n\n');
}

function sectionMarkdown(section: Section, runAt: string, sections: readonly Section[]): string[] {
  const lines: string[] = [`## ${section.title}`, ''];
  const repeated = Math.max(0, ...section.figures.map((f) => f.spread?.runs ?? 0));
  if (repeated > 1)
    lines.push(
      `_Measured ${repeated} times, each on fresh stacks: every figure is the median of the runs, with their spread (min–max) and that of the ratio._`,
      '',
    );
  if (section.measuredAt !== undefined && section.measuredAt !== runAt) {
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
  for (const paragraph of section.setup.flatMap(renderSetup)) lines.push(paragraph, '');
  for (const chapter of chapters) {
    const home = chapter.after.find((id) => sections.some((s) => s.id === id));
    if (home === section.id) lines.push(`## ${chapter.title}`, '', setupChapter(chapter.file), '');
  }
  return lines;
}

function referenceCell(f: Figure): string {
  return f.reference === undefined ? '' : `${withUnit(f.reference.value, f.unit)}${spreadOf(f.spread?.reference, f.unit)} (${f.reference.name})`;
}

/** " (min–max)" of a figure measured in several runs; nothing for one run. */
function spreadOf(range: { readonly min: number; readonly max: number } | null | undefined, unit: string): string {
  return range === undefined || range === null ? '' : ` (${show(round(range.min))}–${show(round(range.max))}${unit === '' ? '' : ` ${unit}`})`;
}

/** Ours ÷ reference, rounded for the report; null when either is not measured (or the reference is 0). */
export function ratio(f: Figure): number | null {
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
export function withUnit(value: number | null, unit: string): string {
  return value === null ? 'not measured' : `${show(value)} ${unit}`;
}

function show(value: number | null): string {
  if (value === null) return 'not measured';
  if (!Number.isFinite(value)) return String(value);
  return Math.abs(value) >= 10_000 ? Math.round(value).toLocaleString('en-US') : String(value);
}

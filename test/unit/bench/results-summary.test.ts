/**
 * The committed results of `make bench` (bench/results/summary.json): the summary keeps of a
 * run's full output everything docs/benchmarks.md and the capacity tool read and drops the rest
 * (series, samples, per-device counts), and docs/benchmarks.md is what it renders — edit
 * bench/setup/ or the summary, then `npm run -s bench-report`.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { benchmarksMarkdown } from '../../../bench/report-markdown.js';
import { readResults, summaryFile, summaryOf, type Results } from '../../../bench/results.js';
import { setupProseDir } from '../../../bench/setup-prose.js';
import { projectRoot } from '../../../src/process/paths.js';

const summary = readResults(summaryFile)!;

/** What a run's full output holds beside the summary's: series and samples no reader takes back. */
function fullOutputOf(results: Results): Results {
  const series = Array.from({ length: 50 }, (_, i) => ({ ms: i * 10, count: i }));
  const widen = (entries: unknown, extra: Record<string, unknown>) =>
    Array.isArray(entries) ? entries.map((e: Record<string, unknown>) => ({ ...e, ...extra })) : entries;
  return {
    ...results,
    sections: results.sections.map((section) => {
      const d = section.details;
      const runs = Array.isArray(d.runs)
        ? d.runs.map((run: Record<string, Record<string, unknown>>) => ({
            ...run,
            bridgeSeconds: 1,
            ours: { ...run.ours, firstMs: 1, curve: series },
            ceiling: { ...run.ceiling, curve: series },
            floor: { lastMs: 1, curve: series },
          }))
        : d.runs;
      return {
        ...section,
        details: {
          ...d,
          series,
          ...(d.runs === undefined ? {} : { runs }),
          ...(d.busyDevices === undefined ? {} : { busyDevices: widen(d.busyDevices, { events: 227, timersStarted: 21 }) }),
          ...(d.samples === undefined ? {} : { samples: widen(d.samples, { heapUsedMiB: 64, stickyCache: 10 }) }),
          ...(d.bridge === undefined ? {} : { bridge: widen(d.bridge, { samples: { create: series } }) }),
          ...(d.maintenance === undefined
            ? {}
            : { maintenance: { references: { noSession: 1 }, runs: widen((d.maintenance as { runs: unknown }).runs, { seconds: 23, steps: {} }) } }),
          ...(d.churn === undefined ? {} : { churn: { ...(d.churn as object), devices: 2_000, rounds: { firstPut: 16 } } }),
        },
      };
    }),
  };
}

describe('the summary of a run', () => {
  it('keeps what the docs and the capacity tool read, and drops series, samples and per-device counts', () => {
    expect(summaryOf(fullOutputOf(summary))).toEqual(summary);
  });

  it('is, as committed, what the summary of a run looks like', () => {
    expect(summaryOf(summary)).toEqual(summary);
  });

  it('keeps every section whole but its details', () => {
    const full = fullOutputOf(summary);
    for (const [i, section] of summaryOf(full).sections.entries()) {
      const { details: _kept, ...rest } = section;
      const { details: _all, ...fullRest } = full.sections[i]!;
      expect(rest).toEqual(fullRest);
    }
  });
});

describe('the report', () => {
  it("renders a section's setup from bench/setup/ as it is when the report is written, with the run's values", () => {
    const claim = summary.sections.find((s) => s.id === 'claim')!;
    const results: Results = { ...summary, sections: [{ ...claim, setup: [{ file: 'claim', values: { devices: 7, rounds: 3 } }] }] };
    const template = readFileSync(path.join(setupProseDir, 'claim.md'), 'utf8');
    const [firstLine] = template.replace('{{devices}}', '7').replace('{{rounds}}', '3').split('\n');
    expect(benchmarksMarkdown(results)).toContain(firstLine!.trim());
  });
});

describe('docs/benchmarks.md', () => {
  it('is what the committed summary renders (npm run -s bench-report rewrites it)', () => {
    const page = readFileSync(path.join(projectRoot, 'docs', 'benchmarks.md'), 'utf8');
    expect(page === benchmarksMarkdown(summary), 'docs/benchmarks.md differs from bench/results/summary.json: run npm run -s bench-report').toBe(
      true,
    );
  });
});

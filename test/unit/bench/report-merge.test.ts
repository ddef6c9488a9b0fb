/** Repeated benchmark runs (`BENCH_REPEAT`) merge into one report: medians, and the spread of values, references and ratios. */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Report } from '../../../bench/report.js';

function run(ours: number, ceiling: number, firstWake: number | null): Report {
  const report = new Report();
  const section = report.section('fan-out', 'Fan-out');
  report.figure(section, { name: '1,000 devices: wakes per second', value: ours, unit: '/s', reference: { name: 'engine ceiling', value: ceiling } });
  report.figure(section, { name: '1,000 devices: message → first wake', value: firstWake, unit: 's' });
  section.details.run = ours;
  return report;
}

// A report prints each figure as it is recorded: not here.
beforeEach(() => void vi.spyOn(process.stdout, 'write').mockImplementation(() => true));
afterEach(() => vi.restoreAllMocks());

describe('Report.merged', () => {
  it('takes each figure’s median over the runs, with the extremes of its value, its reference and their ratio', () => {
    const merged = Report.merged([run(40, 50, 0.2), run(45, 50, null), run(48, 60, 0.1)]);
    const [rate, first] = merged.sections[0]!.figures;
    expect(rate).toMatchObject({
      value: 45,
      reference: { name: 'engine ceiling', value: 50 },
      spread: { runs: 3, value: { min: 40, max: 48 }, reference: { min: 50, max: 60 }, ratio: { min: 0.8, max: 0.9 } },
    });
    // A run that did not measure it counts as a run, and gives no value.
    expect(first).toMatchObject({ value: 0.1, spread: { runs: 3, value: { min: 0.1, max: 0.2 } } });
    expect(merged.sections[0]!.details.repeats).toEqual([{ run: 40 }, { run: 45 }, { run: 48 }]);
  });

  it('is the run itself when there is one', () => {
    const only = run(40, 50, 0.2);
    expect(Report.merged([only])).toBe(only);
  });
});

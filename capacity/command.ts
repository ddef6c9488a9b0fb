/**
 * The capacity command as a function of its command line: what `npm run -s capacity -- …`
 * prints (the report, or with --json everything as JSON). capacity/cli.ts is its entry
 * point; docs/capacity.md quotes its output, and a test holds the page to it.
 */
import { checkAgainstBench } from './bench-check.js';
import { readResults } from './bench-results.js';
import { parseArgs } from './command-line.js';
import { dmLatencyFromBench } from './dm-latency.js';
import { loadCapacityInputs } from './inputs.js';
import { measuredFrom } from './measured.js';
import { capacity } from './model.js';
import { render } from './report.js';

export function capacityCommand(argv: readonly string[]): string {
  const inputs = loadCapacityInputs();
  const { workload, assumptions, results: file, check, json } = parseArgs(argv, inputs.temporalCloudPricing);
  const results = readResults(file);
  const { measured, sources } = measuredFrom(results, inputs.measuredDefaults);
  const c = capacity(workload, measured, assumptions);
  const checkRows = check ? checkAgainstBench(results, assumptions) : undefined;
  const dmLatency = dmLatencyFromBench(results);
  return json
    ? JSON.stringify({ workload, assumptions, measured, sources, capacity: c, check: checkRows, dmLatency }, null, 2)
    : render(workload, assumptions, c, sources, checkRows, dmLatency);
}

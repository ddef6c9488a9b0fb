/**
 * `npm run -s capacity -- --devices 1000000 --messages-per-second 200 --dm-share 0.3 …`: what a
 * deployment of that size needs, by the model of ops/capacity/model.ts (docs/capacity.md), from
 * the costs `make bench` measured and the prices of ops/capacity/inputs.json. `--check` sets the
 * model against the bench's own fan-out and busy channel; `--help` lists the parameters.
 */
import { checkAgainstBench } from './bench-check.js';
import { readResults } from './bench-results.js';
import { parseArgs, UsageError } from './command-line.js';
import { dmLatencyFromBench } from './dm-latency.js';
import { loadCapacityInputs } from './inputs.js';
import { measuredFrom } from './measured.js';
import { capacity } from './model.js';
import { render } from './report.js';

function main(): void {
  const inputs = loadCapacityInputs();
  const { workload, assumptions, results: file, check, json } = parseArgs(process.argv.slice(2), inputs.temporalCloudPricing);
  const results = readResults(file);
  const { measured, sources } = measuredFrom(results, inputs.measuredDefaults);
  const c = capacity(workload, measured, assumptions);
  const checkRows = check ? checkAgainstBench(results, assumptions) : undefined;
  const dmLatency = dmLatencyFromBench(results);
  process.stdout.write(
    json
      ? JSON.stringify({ workload, assumptions, measured, sources, capacity: c, check: checkRows, dmLatency }, null, 2) + '\n'
      : render(workload, assumptions, c, sources, checkRows, dmLatency) + '\n',
  );
}

try {
  main();
} catch (error) {
  process.stderr.write(`capacity: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(error instanceof UsageError ? 2 : 1);
}

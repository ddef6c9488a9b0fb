/**
 * `npm run -s capacity -- --devices 1000000 --messages-per-second 200 --dm-share 0.3 …`: what a
 * deployment of that size needs, by the model of bench/capacity-model.ts (docs/capacity.md),
 * from the costs `make bench` measured. `--check` sets the model against the bench's own
 * fan-out and busy channel; `--help` lists the parameters.
 */
import { existsSync, readFileSync } from 'node:fs';
import { checkAgainstBench, dmLatencyFromBench, measuredFrom, parseArgs, render, UsageError, type ResultsFile } from './capacity-inputs.js';
import { capacity } from './capacity-model.js';

function main(): void {
  const { workload, assumptions, results: file, check, json } = parseArgs(process.argv.slice(2));
  const results = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as ResultsFile) : undefined;
  const { measured, sources } = measuredFrom(results);
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

/**
 * `npm run -s capacity -- --devices 1000000 --messages-per-second 200 --dm-share 0.3 …`: what a
 * deployment of that size needs, by the model of capacity/model.ts (docs/capacity.md), from
 * the costs `make bench` measured and the prices of capacity/inputs.json. `--check` sets the
 * model against the bench's own fan-out and busy channel; `--help` lists the parameters.
 */
import { capacityCommand } from './command.js';
import { UsageError } from './command-line.js';

try {
  process.stdout.write(capacityCommand(process.argv.slice(2)) + '\n');
} catch (error) {
  process.stderr.write(`capacity: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(error instanceof UsageError ? 2 : 1);
}

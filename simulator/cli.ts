#!/usr/bin/env node
/** `simulate-device …`: a simulated Android device against any instance (see simulator/run.ts). */
import { simulatorUsage, parseSimulatorArgs, UsageError } from './cli-options.js';
import { runSimulator } from './run.js';

async function main(args: readonly string[]): Promise<number> {
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(`${simulatorUsage}\n`);
    return 0;
  }
  const options = parseSimulatorArgs(args);
  const stop = new AbortController();
  process.once('SIGINT', () => stop.abort());
  process.once('SIGTERM', () => stop.abort());
  const summary = await runSimulator(options, { out: (line) => process.stdout.write(`${line}\n`), signal: stop.signal });
  if (summary.problems > 0) {
    process.stderr.write(`simulate-device: ${summary.problems} problem(s) with the wakes received (see above)\n`);
    return 3;
  }
  if (summary.timedOut) {
    process.stderr.write(`simulate-device: no wake within the timeout (${summary.wakes} received)\n`);
    return 2;
  }
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof UsageError) process.stderr.write(`simulate-device: ${error.message}\n\n${simulatorUsage}\n`);
    else process.stderr.write(`simulate-device: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);

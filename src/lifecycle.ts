/**
 * Process lifecycle for the entry points: configuration errors print one line and exit 1;
 * SIGTERM/SIGINT run the service's `stop` (stop taking work, finish what is in flight, close
 * connections) within a deadline, then exit. A second signal exits at once.
 */
import { ConfigError } from './config/index.js';
import { StartupError } from './startup-error.js';

export type Stop = () => Promise<void>;

export interface RunOptions {
  /** How long a graceful stop may take before the process exits anyway. */
  readonly stopDeadlineMs?: number;
}

export function runService(name: string, start: () => Promise<Stop>, options: RunOptions = {}): void {
  const deadlineMs = options.stopDeadlineMs ?? 30_000;
  const started = start();
  started.catch((error: unknown) => {
    process.stderr.write(
      error instanceof ConfigError
        ? `${error.message}\n`
        : error instanceof StartupError
          ? `${name}: ${error.message}\n`
          : `${name}: failed to start: ${errorText(error)}\n`,
    );
    process.exit(1);
  });
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      process.stderr.write(`${name}: ${signal} again, exiting now\n`);
      process.exit(1);
    }
    stopping = true;
    setTimeout(() => {
      process.stderr.write(`${name}: graceful stop took over ${deadlineMs} ms, exiting\n`);
      process.exit(1);
    }, deadlineMs).unref();
    // A signal during start-up waits for the start to finish, then stops what it started.
    started
      .then((stop) => stop())
      .then(() => process.exit(0))
      .catch((error: unknown) => {
        process.stderr.write(`${name}: error while stopping: ${errorText(error)}\n`);
        process.exit(1);
      });
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}

function errorText(error: unknown): string {
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}

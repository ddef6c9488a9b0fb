/**
 * Process lifecycle for the entry points: configuration errors print one line and exit 1;
 * SIGTERM/SIGINT run the service's `stop` (stop taking work, finish what is in flight, close
 * connections) within a deadline, then exit 0. A second signal exits at once.
 *
 * A service whose essential loop ends by itself — the Temporal worker stops polling, the
 * bridge's consumer is gone for good, the api's listener closes — must not live on doing
 * nothing behind a `/healthz` that answers 200: its `ended` settles, the process logs why,
 * stops what it opened within the same deadline and exits 1, and the orchestrator restarts it.
 *
 * Once a service has started, every line this module writes goes through the service's
 * logger (JSON); so do Node's process warnings, which Node would otherwise print as text.
 */
import type { Logger } from '../observability/log.js';
import { StartupError } from './startup-error.js';

export interface RunningService {
  /** Stop taking work, finish what is in flight, close connections. */
  stop(): Promise<void>;
  /**
   * Settles with a reason when the service's essential loop ended without `stop` having been
   * called; pending for as long as the service works.
   */
  readonly ended: Promise<string>;
  readonly log: Logger;
}

export interface RunOptions {
  /** How long a graceful stop may take before the process exits anyway. */
  readonly stopDeadlineMs?: number;
}

export function runService(name: string, start: () => Promise<RunningService>, options: RunOptions = {}): void {
  const deadlineMs = options.stopDeadlineMs ?? 30_000;
  let service: RunningService | undefined;
  let stopping = false;
  const say = (level: 'warn' | 'error' | 'fatal', message: string, fields: Record<string, unknown> = {}) =>
    service === undefined ? process.stderr.write(`${name}: ${message}\n`) : service.log[level](fields, message);
  routeWarnings(() => service?.log, name);

  const started = start();
  started.then(
    (running) => {
      service = running;
      void running.ended.then((reason) => {
        if (stopping) return;
        say('fatal', `${name} cannot go on: ${reason}; stopping, exit code 1`, { reason });
        stop(1);
      });
    },
    (error: unknown) => {
      process.stderr.write(
        error instanceof StartupError
          ? `${error.namesItsSource ? '' : `${name}: `}${error.message}\n`
          : `${name}: failed to start: ${errorText(error)}\n`,
      );
      process.exit(1);
    },
  );

  /** Stops the service (once it has started) within the deadline, then exits with `code`. */
  const stop = (code: number) => {
    stopping = true;
    setTimeout(() => {
      say('error', `graceful stop took over ${deadlineMs} ms, exiting`);
      process.exit(1);
    }, deadlineMs).unref();
    // A signal during start-up waits for the start to finish, then stops what it started.
    started
      .then((running) => running.stop())
      .then(() => process.exit(code))
      .catch((error: unknown) => {
        say('error', `error while stopping: ${errorText(error)}`);
        process.exit(1);
      });
  };
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      say('warn', `${signal} again, exiting now`);
      process.exit(1);
    }
    stop(0);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}

/**
 * Node's process warnings (deprecations, a library's `emitWarning`) as log lines of the
 * service instead of Node's own text on stderr; before the service has a logger, as one JSON
 * line of the same shape.
 */
function routeWarnings(logger: () => Logger | undefined, name: string): void {
  process.removeAllListeners('warning');
  process.on('warning', (warning) => {
    const fields = { warning: { name: warning.name, message: warning.message, ...codeOf(warning) } };
    const log = logger();
    if (log !== undefined) log.warn(fields, 'process warning');
    else
      process.stderr.write(
        `${JSON.stringify({ level: 'warn', time: new Date().toISOString(), service: name, ...fields, msg: 'process warning' })}\n`,
      );
  });
}

function codeOf(warning: Error): { code?: string } {
  const code = (warning as { code?: unknown }).code;
  return typeof code === 'string' ? { code } : {};
}

/**
 * Why `loop` (a service's essential loop) ended, once it ends while `stopped()` is false; a
 * promise that stays pending when the service stopped it on purpose.
 */
export function endedUnlessStopped(loop: Promise<unknown>, what: string, stopped: () => boolean): Promise<string> {
  return new Promise((resolve) => {
    loop.then(
      () => stopped() || resolve(`${what} ended`),
      (error: unknown) => stopped() || resolve(`${what} failed: ${error instanceof Error ? error.message : String(error)}`),
    );
  });
}

function errorText(error: unknown): string {
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}

/**
 * A problem found while starting that no waiting will fix — a certificate the server does
 * not accept, credentials it refuses. The entry point prints its message as one line and
 * exits 1, like a ConfigError; an unreachable service is not one of these (it may come back).
 */
export class StartupError extends Error {
  override name = 'StartupError';
  /** The message names its own source (`config: …`): printed as it is, not after the process's name. */
  readonly namesItsSource: boolean = false;
}

import { StartupError } from '../process/startup-error.js';

/** A bad setting: its message is one line, `config: <VARIABLE> <problem>`, never quoting a secret. */
export class ConfigError extends StartupError {
  override readonly namesItsSource = true;
  constructor(
    readonly variable: string,
    problem: string,
  ) {
    super(`config: ${variable} ${problem}`);
    this.name = 'ConfigError';
  }
}

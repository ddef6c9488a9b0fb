/** A bad setting: its message is one line, `config: <VARIABLE> <problem>`, never quoting a secret. */
export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    problem: string,
  ) {
    super(`config: ${variable} ${problem}`);
    this.name = 'ConfigError';
  }
}

/**
 * The process environment as the configuration sees it: blank values are unset, and every
 * secret `X` may come from the file named by `X_FILE` instead (a Kubernetes Secret mount,
 * docs/design.md, Production connections). Setting both is an error; so is a file that cannot be read.
 */
import { readFileSync } from 'node:fs';
import { ConfigError } from './errors.js';

export type Env = Readonly<Record<string, string | undefined>>;

/** The variables that may be given as `<NAME>_FILE`. */
export const secretVariables = [
  'DATABASE_URL',
  'JWT_SECRET',
  'JWT_PUBLIC_KEY',
  'FCM_CREDENTIALS_JSON',
  'PUSH_VAPID_PRIVATE_KEY',
  'TEMPORAL_API_KEY',
  'NATS_PASSWORD',
  'NATS_TOKEN',
] as const;

/** The environment with blanks removed and each `X_FILE` read into `X`. */
export function resolveEnv(env: Env): Record<string, string | undefined> {
  const resolved: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(env)) resolved[name] = value === undefined || value.trim() === '' ? undefined : value;
  for (const name of secretVariables) {
    const file = resolved[`${name}_FILE`];
    if (file === undefined) continue;
    if (resolved[name] !== undefined) throw new ConfigError(`${name}_FILE`, `must not be set together with ${name}`);
    resolved[name] = readSecretFile(`${name}_FILE`, file);
  }
  return resolved;
}

/** Reads a file named by `variable`; one trailing newline (as `echo` and editors leave) is dropped. */
export function readSecretFile(variable: string, file: string): string {
  const text = readFile(variable, file)
    .toString('utf8')
    .replace(/\r?\n$/, '');
  if (text.trim() === '') throw new ConfigError(variable, `names an empty file (${file})`);
  return text;
}

export function readFile(variable: string, file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    throw new ConfigError(variable, `names a file that cannot be read (${code}: ${file})`);
  }
}

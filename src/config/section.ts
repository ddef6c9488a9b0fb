/**
 * One concern's variables: a zod shape that validates each variable on its own, and a
 * `build` that assembles the section (and checks rules across variables, throwing
 * ConfigError). A process's configuration is the sections it needs (processes.ts).
 */
import { z } from 'zod';
import { ConfigError } from './errors.js';

export type ResolvedEnv = Readonly<Record<string, string | undefined>>;

export interface Section<T> {
  /** The variables this section reads (secrets by their name; `<NAME>_FILE` is resolved before). */
  readonly variables: readonly string[];
  read(env: ResolvedEnv): T;
}

/**
 * `retired`: variables no longer read, each with what replaced it. One still set stops the
 * process with that, rather than be silently ignored; they are not among `variables`.
 */
export function section<S extends z.ZodRawShape, T>(
  shape: S,
  build: (vars: z.output<z.ZodObject<S>>) => T,
  retired: Readonly<Record<string, string>> = {},
): Section<T> {
  const schema = z.object(shape);
  return {
    variables: Object.keys(shape),
    read(env) {
      for (const [name, instead] of Object.entries(retired)) {
        if (env[name] !== undefined) throw new ConfigError(name, `is no longer read; it was replaced by ${instead}`);
      }
      const parsed = schema.safeParse(env);
      if (!parsed.success) {
        const issue = parsed.error.issues[0]!;
        throw new ConfigError(String(issue.path[0] ?? 'environment'), issue.message);
      }
      return build(parsed.data);
    },
  };
}

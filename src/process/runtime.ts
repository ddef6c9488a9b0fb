/**
 * The runtime every process needs, checked by each entry point before it loads anything else:
 * on an older Node the dependencies fail while loading or on first use, with errors that name
 * neither the runtime nor the fix ("Promise.withResolvers is not a function" from slonik reads
 * like a database problem). This module must itself load on any Node the check may meet, so it
 * imports only Node's built-in modules, and only as whole modules (a named import of an export
 * an older Node lacks fails before any code runs).
 */
import zlib from 'node:zlib';

/** The floor of .nvmrc and package.json's `engines`. */
export const requiredNodeMajor = 24;

interface Feature {
  readonly name: string;
  /** The dependency that needs it, for the operator's line. */
  readonly usedBy: string;
  readonly present: () => boolean;
}

/** What the dependencies call that older runtimes lack. */
export const requiredFeatures: readonly Feature[] = [
  { name: 'Promise.withResolvers', usedBy: 'slonik', present: () => typeof (Promise as { withResolvers?: unknown }).withResolvers === 'function' },
  {
    name: 'zlib.createZstdDecompress',
    usedBy: 'undici',
    present: () => typeof (zlib as { createZstdDecompress?: unknown }).createZstdDecompress === 'function',
  },
];

export interface Runtime {
  /** `process.version`: "v24.19.0". */
  readonly version: string;
  readonly execPath: string;
  readonly missing: readonly Feature[];
}

export function currentRuntime(): Runtime {
  return { version: process.version, execPath: process.execPath, missing: requiredFeatures.filter((f) => !f.present()) };
}

/** One line naming what was found and what is needed, or undefined when the runtime will do. */
export function runtimeProblem(name: string, runtime: Runtime): string | undefined {
  const major = Number(/^v?(\d+)\./.exec(runtime.version)?.[1] ?? Number.NaN);
  const found = `found Node ${runtime.version} at ${runtime.execPath}`;
  const lacking = runtime.missing.map((f) => `${f.name} (used by ${f.usedBy})`).join(' and ');
  if (!(major >= requiredNodeMajor)) {
    return `${name}: needs Node ${requiredNodeMajor} or newer; ${found}${lacking === '' ? '' : `, which lacks ${lacking}`}`;
  }
  if (lacking !== '') return `${name}: needs ${lacking}; ${found}, which lacks it`;
  return undefined;
}

/** Stops the process with its one line (exit 1) unless the runtime will do. */
export function requireRuntime(name: string): void {
  const problem = runtimeProblem(name, currentRuntime());
  if (problem === undefined) return;
  process.stderr.write(`${problem}\n`);
  process.exit(1);
}

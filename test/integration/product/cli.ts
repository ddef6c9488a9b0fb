/** Runs a built command line (dist/src/bin/<name>.js) as an operator would, collecting its output and exit code. */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { projectRoot } from '../../../src/paths.js';

export interface CliRun {
  output(): string;
  readonly exit: Promise<number | null>;
}

export function runCli(name: string, args: readonly string[], env: Record<string, string> = {}): CliRun {
  const child = spawn(process.execPath, [path.join(projectRoot, 'dist', 'src', 'bin', `${name}.js`), ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: '/usr/local/bin:/usr/bin:/bin', ...env },
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return { output: () => output, exit: new Promise((resolve) => child.once('exit', resolve)) };
}

/**
 * Runs a built command line as an operator would, collecting its output and exit code: the
 * service's (dist/src/bin/<name>.js) or the simulator's (`simulate-device`: dist-tools/simulator/cli.js).
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { projectRoot } from '../../../src/process/paths.js';

export interface CliRun {
  output(): string;
  readonly exit: Promise<number | null>;
}

export function runCli(name: string, args: readonly string[], env: Record<string, string> = {}): CliRun {
  const command =
    name === 'simulate-device'
      ? path.join(projectRoot, 'dist-tools', 'simulator', 'cli.js')
      : path.join(projectRoot, 'dist', 'src', 'bin', `${name}.js`);
  const child = spawn(process.execPath, [command, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: '/usr/local/bin:/usr/bin:/bin', ...env },
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return { output: () => output, exit: new Promise((resolve) => child.once('exit', resolve)) };
}

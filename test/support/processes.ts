/** Runs the built entry points (dist/) as real child processes, as production does. */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { inject } from 'vitest';
import { waitFor } from '../../devstack/daemons.js';
import { projectRoot } from '../../src/process/paths.js';
import './provided.js';

export interface RunningProcess {
  readonly child: ChildProcess;
  output(): string;
  /** SIGTERM, then the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export function serviceEnv(databaseUrl: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: '/usr/local/bin:/usr/bin:/bin',
    DATABASE_URL: databaseUrl,
    NATS_URL: inject('natsUrl'),
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    ...inject('temporalEnv'),
    JWT_SECRET: 'integration-test-secret-0123456789abcdef',
    LOG_LEVEL: 'info',
    // The SDK's metrics port is fixed by default (9466); tests that want it pass a free one.
    WORKER_SDK_METRICS_PORT: '0',
    ...extra,
  };
}

export function startProcess(entry: string, env: Record<string, string>): RunningProcess {
  const child = spawn(process.execPath, [path.join(projectRoot, 'dist', 'src', 'bin', `${entry}.js`)], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    output: () => output,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null) child.kill(signal);
      return exited;
    },
  };
}

export async function waitReady(url: string, process: RunningProcess, timeoutMs = 60_000): Promise<void> {
  await waitFor(
    `${url}/readyz`,
    async () => {
      if (process.child.exitCode !== null) throw new Error(`exited with ${process.child.exitCode}: ${process.output()}`);
      return (await fetch(`${url}/readyz`).catch(() => undefined))?.status === 200;
    },
    timeoutMs,
  );
}

/** The lines of a process's output that are not one JSON object each (every line should be). */
export function nonJsonLines(output: string): string[] {
  return output
    .trim()
    .split('\n')
    .filter((line) => {
      try {
        const parsed: unknown = JSON.parse(line);
        return typeof parsed !== 'object' || parsed === null;
      } catch {
        return true;
      }
    });
}

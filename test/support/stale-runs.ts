/**
 * A test run killed before its teardown (Ctrl-C, a CI timeout) leaves its private services
 * running under `.dev/test-*-<pid>`. The next run stops and removes those of dead processes.
 */
import { existsSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { isAlive } from '../../devstack/daemons.js';
import { stopEverything } from '../../devstack/services.js';
import { projectRoot } from '../../src/process/paths.js';
import { removeCluster } from '../../devstack/postgres.js';

export async function cleanStaleTestRuns(pgBin: string): Promise<void> {
  const root = path.join(projectRoot, '.dev');
  if (!existsSync(root)) return;
  for (const name of readdirSync(root)) {
    const match = /^test-(?:[a-z]+-)?(\d+)$/.exec(name);
    if (match === null || isAlive(Number(match[1]))) continue;
    const dir = path.join(root, name);
    await stopEverything(dir, pgBin).catch(() => undefined);
    removeCluster(dir);
    rmSync(dir, { recursive: true, force: true });
  }
}

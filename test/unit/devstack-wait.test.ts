/**
 * `make up` waits for its processes' readiness, and stops waiting as soon as one of them exits:
 * a worker that refuses a setting exits at start with one line, and `make up` prints that line
 * at once instead of polling the worker's /readyz until its deadline and saying "timed out".
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { logFile, logSize, startDaemon, stopDaemon, waitUntilReady, type Starting } from '../../devstack/daemons.js';

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) {
    for (const name of ['api', 'worker']) await stopDaemon(dir, name, 1_000);
    rmSync(dir, { recursive: true, force: true });
  }
});

/** Starts `script` as the daemon `name` of a fresh stack directory, as `make up` starts a process. */
function start(dir: string, name: string, script: string, ready: () => Promise<boolean> = async () => false): Starting {
  const logFrom = logSize(dir, name);
  const pid = startDaemon(dir, { name, command: process.execPath, args: ['-e', script] });
  return { name, pid, logFrom, what: name, ready };
}

function stackDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'devstack-wait-'));
  dirs.push(dir);
  return dir;
}

const refusing = `process.stderr.write('config: PUSH_MIN_INTERVAL_MS must be an integer from 1 to 86400000 (got "often")\\n'); process.exit(1);`;
const runningForever = 'setInterval(() => undefined, 1000);';

describe('waiting for the stack to be ready', () => {
  it('stops as soon as a process exits, with the line it wrote, while the others are still not ready', async () => {
    const dir = stackDir();
    const daemons = [start(dir, 'api', runningForever), start(dir, 'worker', refusing)];
    // A deadline far beyond the test's own: only the exit can end this wait in time.
    await expect(waitUntilReady(dir, daemons, 3_600_000)).rejects.toThrow(
      `worker exited while starting: config: PUSH_MIN_INTERVAL_MS must be an integer from 1 to 86400000 (got "often")\n(log: ${logFile(dir, 'worker')})`,
    );
  }, 30_000);

  it("prints only this start's output, not an earlier run's from the same log", async () => {
    const dir = stackDir();
    const earlier = start(dir, 'worker', `process.stderr.write('worker: an earlier failure\\n'); process.exit(1);`);
    await expect(waitUntilReady(dir, [earlier], 3_600_000)).rejects.toThrow('worker: an earlier failure');
    const now = start(dir, 'worker', refusing);
    const failure = await waitUntilReady(dir, [now], 3_600_000).catch((error: Error) => error.message);
    expect(failure).toContain('config: PUSH_MIN_INTERVAL_MS');
    expect(failure).not.toContain('an earlier failure');
  }, 30_000);

  it('returns once every process is ready', async () => {
    const dir = stackDir();
    let polls = 0;
    const daemons = [start(dir, 'api', runningForever, async () => ++polls > 2)];
    await expect(waitUntilReady(dir, daemons, 3_600_000)).resolves.toBeUndefined();
  }, 30_000);

  it('says which process was not ready by the deadline', async () => {
    const dir = stackDir();
    await expect(waitUntilReady(dir, [start(dir, 'api', runningForever)], 300)).rejects.toThrow('timed out after 300 ms waiting for api');
  }, 30_000);
});

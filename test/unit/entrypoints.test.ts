/**
 * A bad configuration stops each process at start with exit code 1 and one line naming the
 * variable (runs the built entry points, as an operator would).
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/paths.js';

const run = promisify(execFile);

async function start(entry: string, env: Record<string, string>): Promise<{ code: number; stderr: string }> {
  // `all` (the three in one process) is development tooling: the tools' build holds it.
  const bin =
    entry === 'all' ? path.join(projectRoot, 'dist-tools', 'devstack', 'all-in-one.js') : path.join(projectRoot, 'dist', 'src', 'bin', `${entry}.js`);
  try {
    await run(process.execPath, [bin], { env: { PATH: '/usr/bin:/bin', ...env }, timeout: 20_000 });
    return { code: 0, stderr: '' };
  } catch (error) {
    const failed = error as { code: number; stderr: string };
    return { code: failed.code, stderr: failed.stderr };
  }
}

describe('entry points with a bad configuration', () => {
  it.each(['api', 'worker', 'bridge', 'all', 'migrate'])('%s exits 1 with one line naming the variable', async (entry) => {
    const result = await start(entry, { DATABASE_URL: 'postgres://x@127.0.0.1:1/x', JWT_SECRET: 'x'.repeat(40), LOG_LEVEL: 'loud' });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe('config: LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent (got "loud")\n');
  });

  it.each([
    ['worker', 'PUSH_MIN_INTERVAL_MS', 'often', 'must be an integer from 1 to 86400000 (got "often")'],
    ['bridge', 'NATS_URL', 'http://nats', 'must be comma-separated nats:// URLs (bad entry "http://nats")'],
    ['api', 'PORT', 'eighty', 'must be an integer from 0 to 65535 (got "eighty")'],
  ])('%s checks its own %s', async (entry, variable, value, problem) => {
    const result = await start(entry, { DATABASE_URL: 'postgres://x@127.0.0.1:1/x', JWT_SECRET: 'x'.repeat(40), [variable]: value });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(`config: ${variable} ${problem}\n`);
  });

  it('the api names a missing DATABASE_URL', async () => {
    const result = await start('api', { JWT_SECRET: 'x'.repeat(40) });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe('config: DATABASE_URL is required (a postgres:// connection string)\n');
  });
});

/**
 * A bad configuration stops each process at start with exit code 1 and one line naming the
 * variable, and so does a runtime too old for the dependencies: one line naming what was found
 * and what is needed (runs the built entry points, as an operator would).
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/process/paths.js';

const run = promisify(execFile);

async function start(
  entry: string,
  env: Record<string, string>,
  node: { readonly execPath: string; readonly flags?: readonly string[] } = { execPath: process.execPath },
): Promise<{ code: number; stderr: string }> {
  // `all` (the three in one process) is development tooling: the tools' build holds it.
  const bin =
    entry === 'all' ? path.join(projectRoot, 'dist-tools', 'devstack', 'all-in-one.js') : path.join(projectRoot, 'dist', 'src', 'bin', `${entry}.js`);
  try {
    await run(node.execPath, [...(node.flags ?? []), bin], { env: { PATH: '/usr/bin:/bin', ...env }, timeout: 20_000 });
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

const services = ['api', 'worker', 'bridge', 'migrate', 'push-admin'];
const validEnv = { DATABASE_URL: 'postgres://x@127.0.0.1:1/x', JWT_SECRET: 'x'.repeat(40) };

/** A Node on this machine older than the floor (a distribution's /usr/bin/node), if any. */
function olderNode(): { execPath: string; version: string } | undefined {
  for (const candidate of ['/usr/bin/node', '/usr/local/bin/node']) {
    if (!existsSync(candidate)) continue;
    const version = execFileSync(candidate, ['--version'], { encoding: 'utf8' }).trim();
    if (Number(version.slice(1).split('.')[0]) < 24) return { execPath: candidate, version };
  }
  return undefined;
}
const older = olderNode();

describe('entry points on a runtime the dependencies cannot run on', () => {
  // A preload takes away what slonik calls and makes the version an older one's, before the
  // entry point runs: what an operator's older Node looks like to the check.
  const pretendNode20 = `data:text/javascript,delete Promise.withResolvers; Object.defineProperty(process, 'version', { value: 'v20.11.1' });`;

  it.each(services)('%s on a Node 20 exits 1 with one line naming the Node found and the Node needed', async (entry) => {
    const result = await start(entry, validEnv, { execPath: process.execPath, flags: ['--import', pretendNode20] });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `${entry}: needs Node 24 or newer; found Node v20.11.1 at ${process.execPath}, which lacks Promise.withResolvers (used by slonik)\n`,
    );
  });

  it.each(services)('%s on a Node 24 without Promise.withResolvers names the missing function and who uses it', async (entry) => {
    const result = await start(entry, validEnv, {
      execPath: process.execPath,
      flags: ['--import', 'data:text/javascript,delete Promise.withResolvers;'],
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `${entry}: needs Promise.withResolvers (used by slonik); found Node ${process.version} at ${process.execPath}, which lacks it\n`,
    );
  });

  it.skipIf(older === undefined).each(services)(`%s on this machine's ${older?.version ?? 'older Node'} stops with its one line`, async (entry) => {
    const result = await start(entry, validEnv, { execPath: older!.execPath });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      new RegExp(`^${entry}: needs Node 24 or newer; found Node ${older!.version.replace(/\./g, '\\.')} at ${older!.execPath}[^\n]*\n$`),
    );
  });
});

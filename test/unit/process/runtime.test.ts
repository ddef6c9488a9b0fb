/**
 * The runtime the project holds itself to: the tests run on the Node of .nvmrc's major or
 * newer (make installs that Node into .tools/bin when the machine's is older, and every
 * process the tests start is `process.execPath`), package.json declares the same floor, and
 * no production package is deprecated on the registry (checked at install time by
 * tools/deprecations.ts, whose record is read here: tests never reach the registry).
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { projectRoot } from '../../../src/process/paths.js';
import { requiredNodeMajor } from '../../../src/process/runtime.js';
import { sendJson, startServer, type RunningServer } from '../../../simulator/loopback-server.js';

const nvmrc = readFileSync(path.join(projectRoot, '.nvmrc'), 'utf8').trim();
const floor = Number(nvmrc.split('.')[0]);
const pkg = JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as {
  engines: { node: string };
  packageManager: string;
  devDependencies: Record<string, string>;
};
const lockPath = path.join(projectRoot, 'package-lock.json');
const major = (version: string) => Number(version.replace(/^v/, '').split('.')[0]);

describe('runtime', () => {
  it(`runs on Node ${floor} or newer, the floor that .nvmrc, engines and @types/node declare`, () => {
    expect(floor).toBeGreaterThanOrEqual(24);
    expect(
      major(process.version),
      `Node ${process.version} (${process.execPath}) runs the tests: run them through make, which puts Node ${nvmrc} in .tools/bin first on PATH`,
    ).toBeGreaterThanOrEqual(floor);
    expect(pkg.engines.node).toBe(`>=${floor}`);
    expect(requiredNodeMajor, 'the floor every process checks at start (src/process/runtime.ts)').toBe(floor);
    expect(major(pkg.devDependencies['@types/node']!)).toBe(floor);
    expect(pkg.packageManager).toMatch(/^npm@\d+\.\d+\.\d+$/);
  });
});

interface DeprecationRecord {
  lockSha256: string;
  registry: string;
  packages: number;
  registryMarksDeprecations: boolean;
  deprecated: { name: string; version: string; message: string }[];
  error?: string;
}

const recordPath = path.join(projectRoot, 'node_modules', '.zippchat-deprecations.json');
const record = existsSync(recordPath) ? (JSON.parse(readFileSync(recordPath, 'utf8')) as DeprecationRecord) : undefined;
const unchecked = record !== undefined && record.error === undefined && !record.registryMarksDeprecations;

describe('deprecated packages', () => {
  // A registry that does not mark even the canary deprecated carries no deprecation data
  // (a mirror that strips it): nothing can be said then, and the test says so by skipping.
  it.skipIf(unchecked)(
    `no production package, direct or transitive, is deprecated on the registry${unchecked ? ` (not checkable: ${record?.registry} carries no deprecation data)` : ''}`,
    () => {
      expect(record, 'no install-time record: run tools/install.sh (make does)').toBeDefined();
      expect(record!.lockSha256, 'the record is of another package-lock.json: run tools/install.sh (make does)').toBe(
        createHash('sha256').update(readFileSync(lockPath)).digest('hex'),
      );
      expect(record!.error).toBeUndefined();
      expect(record!.packages).toBeGreaterThan(0);
      expect(record!.deprecated).toEqual([]);
    },
  );

  let registry: RunningServer | undefined;
  const dirs: string[] = [];
  afterEach(async () => {
    await registry?.close();
    registry = undefined;
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  /** Runs the install-time check against a fake registry that marks `deprecated` (name@version). */
  async function checkAgainst(deprecated: ReadonlySet<string>): Promise<DeprecationRecord> {
    registry = await startServer((request, response) => {
      const name = decodeURIComponent(request.path.slice(1));
      const versions = Object.fromEntries(
        ['1.0.0', '2.88.2', ...lockVersions(name)].map((v) => [v, deprecated.has(`${name}@${v}`) ? { deprecated: `${name} is no more` } : {}]),
      );
      sendJson(response, 200, { name, versions });
    });
    const dir = mkdtempSync(path.join(tmpdir(), 'deprecations-'));
    dirs.push(dir);
    const out = path.join(dir, 'record.json');
    await promisify(execFile)(process.execPath, ['tools/deprecations.ts', '--registry', registry.url, '--lock', lockPath, '--out', out], {
      cwd: projectRoot,
    });
    return JSON.parse(readFileSync(out, 'utf8')) as DeprecationRecord;
  }

  it('the install-time check reports a deprecated transitive production package, not a dev-only one', async () => {
    const transitive = entries.find((e) => !e.dev && !e.direct)!;
    const devOnly = entries.find((e) => e.dev)!;
    const found = await checkAgainst(new Set([`${transitive.name}@${transitive.version}`, `${devOnly.name}@${devOnly.version}`, 'request@2.88.2']));
    expect(found.registryMarksDeprecations).toBe(true);
    expect(found.deprecated).toEqual([{ name: transitive.name, version: transitive.version, message: `${transitive.name} is no more` }]);
  });

  it('the install-time check notices a registry that carries no deprecation data', async () => {
    const found = await checkAgainst(new Set());
    expect(found).toMatchObject({ registryMarksDeprecations: false, deprecated: [] });
  });
});

interface LockEntry {
  readonly name: string;
  readonly version: string;
  readonly dev: boolean;
  readonly direct: boolean;
}

function lockEntries(): LockEntry[] {
  const lock = JSON.parse(readFileSync(lockPath, 'utf8')) as { packages: Record<string, { version?: string; dev?: boolean; name?: string }> };
  const root = lock.packages['']! as unknown as { dependencies?: Record<string, string>; devDependencies?: Record<string, string> };
  const direct = new Set([...Object.keys(root.dependencies ?? {}), ...Object.keys(root.devDependencies ?? {})]);
  return Object.entries(lock.packages)
    .filter(([key, entry]) => key.includes('node_modules/') && entry.version !== undefined)
    .map(([key, entry]) => {
      const name = entry.name ?? key.slice(key.lastIndexOf('node_modules/') + 'node_modules/'.length);
      return { name, version: entry.version!, dev: entry.dev === true, direct: key === `node_modules/${name}` && direct.has(name) };
    });
}

const entries = lockEntries();

function lockVersions(name: string): string[] {
  return entries.filter((e) => e.name === name).map((e) => e.version);
}

/**
 * The runtime the project holds itself to: the tests run on the Node of .nvmrc's major or
 * newer (make installs that Node into .tools/bin when the machine's is older, and every
 * process the tests start is `process.execPath`), and package.json declares the same floor.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/paths.js';

const nvmrc = readFileSync(path.join(projectRoot, '.nvmrc'), 'utf8').trim();
const floor = Number(nvmrc.split('.')[0]);
const pkg = JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as {
  engines: { node: string };
  packageManager: string;
  devDependencies: Record<string, string>;
};
const major = (version: string) => Number(version.replace(/^v/, '').split('.')[0]);

describe('runtime', () => {
  it(`runs on Node ${floor} or newer, the floor that .nvmrc, engines and @types/node declare`, () => {
    expect(floor).toBeGreaterThanOrEqual(24);
    expect(
      major(process.version),
      `Node ${process.version} (${process.execPath}) runs the tests: run them through make, which puts Node ${nvmrc} in .tools/bin first on PATH`,
    ).toBeGreaterThanOrEqual(floor);
    expect(pkg.engines.node).toBe(`>=${floor}`);
    expect(major(pkg.devDependencies['@types/node']!)).toBe(floor);
    expect(pkg.packageManager).toMatch(/^npm@\d+\.\d+\.\d+$/);
  });
});

/**
 * One version per release: package.json's `version` (semantic versioning) is what the Helm
 * chart's `version` and `appVersion` say, what `/healthz` answers (src/process/version.ts reads it),
 * and the newest release of CHANGELOG.md (above it, at most an `[Unreleased]` entry). The image labels take it from package.json too.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { projectRoot } from '../../src/process/paths.js';
import { serviceVersion } from '../../src/process/version.js';

const read = (file: string) => readFileSync(path.join(projectRoot, file), 'utf8');
const semver = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?$/;

describe('the release version', () => {
  it('is a semantic version, the one src/process/version.ts serves', () => {
    const { version } = JSON.parse(read('package.json')) as { version: string };
    expect(version).toMatch(semver);
    expect(serviceVersion).toBe(version);
    expect((JSON.parse(read('package-lock.json')) as { version: string }).version).toBe(version);
  });

  it("is the Helm chart's version and appVersion", () => {
    const chart = parse(read('deploy/helm/zippchat-push/Chart.yaml')) as { version: string; appVersion: string };
    expect({ version: chart.version, appVersion: chart.appVersion }).toEqual({ version: serviceVersion, appVersion: serviceVersion });
  });

  it("is CHANGELOG.md's newest release; every entry, Unreleased too, says what it upgrades from", () => {
    const entries = read('CHANGELOG.md')
      .split(/^## \[/m)
      .slice(1);
    const names = entries.map((e) => e.slice(0, e.indexOf(']')));
    // Keep a Changelog: what main has that no release has yet sits above the releases, under [Unreleased].
    expect(names.filter((n) => n !== 'Unreleased')[0]).toBe(serviceVersion);
    expect(names.indexOf('Unreleased')).toBeLessThanOrEqual(0);
    for (const entry of entries.slice(0, 2)) expect(entry).toMatch(/^### Upgrading/m);
  });
});

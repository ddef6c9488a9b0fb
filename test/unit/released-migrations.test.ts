/**
 * Migrations are immutable once released: a database that applied a file must find it again,
 * under the same number, doing the same thing — golang-migrate and `migrate up` record only a
 * version, never what ran, so a renumbered file is silently skipped and an edited one never
 * runs where the old one did. Compared with every commit a deployment may run
 * (test/support/previous-versions.ts) and with the last release tag when the clone has it
 * (CI clones may carry no tags: the pinned commits are always checked).
 *
 * The deliberate differences, each documented in migrations/README.md:
 *   - 2db4f11's 000028_push_wake_priority came back with `ADD COLUMN IF NOT EXISTS` (a no-op
 *     where 000026 added the column) and a down that changes nothing;
 *   - 000022–000025's comments were reworded after 2db4f11 (their statements are the same).
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { serviceMigrationsDir } from '../../src/db/migrations.js';
import { projectRoot } from '../../src/process/paths.js';
import { previousVersions } from '../support/previous-versions.js';

const git = (...args: string[]) => execFileSync('git', ['-C', projectRoot, ...args], { encoding: 'utf8', maxBuffer: 16 << 20 });

/** The service's migration files at `commit` (not host/), by file name. */
function filesAt(commit: string): Map<string, string> {
  const names = git('ls-tree', '--name-only', `${commit}:migrations`)
    .split('\n')
    .filter((name) => /^\d+_.*\.sql$/.test(name));
  return new Map(names.map((name) => [name, git('show', `${commit}:migrations/${name}`)]));
}

const today = new Map(
  readdirSync(serviceMigrationsDir)
    .filter((name) => /^\d+_.*\.sql$/.test(name))
    .map((name) => [name, readFileSync(path.join(serviceMigrationsDir, name), 'utf8')]),
);

/** The statements of a file: its comments and blank lines left out. */
const statements = (sql: string) =>
  sql
    .split('\n')
    .map((line) => line.replace(/--.*$/, '').trimEnd())
    .filter((line) => line !== '')
    .join('\n');

type Difference = (released: string, now: string) => boolean;
/** Differences allowed from one released commit, by file name; none from any other. */
const allowed: Readonly<Record<string, Readonly<Record<string, Difference>>>> = {
  '2db4f11': {
    '000022_push_notifications.up.sql': (released, now) => statements(released) === statements(now),
    '000023_push_bookkeeping.up.sql': (released, now) => statements(released) === statements(now),
    '000024_push_delivery_control.up.sql': (released, now) => statements(released) === statements(now),
    '000025_maintenance_cursors_rate_limit.up.sql': (released, now) => statements(released) === statements(now),
    '000028_push_wake_priority.up.sql': (released, now) =>
      now === released.replace('ADD COLUMN last_wake_priority', 'ADD COLUMN IF NOT EXISTS last_wake_priority'),
    '000028_push_wake_priority.down.sql': (_released, now) => statements(now) === 'SELECT 1;',
  },
};

/** The newest release tag (`vX.Y.Z`) this clone has, if any. */
function lastReleaseTag(): string | undefined {
  const tags = git('tag', '--list', 'v[0-9]*', '--sort=-v:refname', '--merged', 'HEAD').split('\n').filter(Boolean);
  return tags[0];
}

function expectKept(name: string, commit: string): void {
  const released = filesAt(commit);
  expect(released.size, `${name} has migration files`).toBeGreaterThan(0);
  for (const [file, content] of released) {
    expect(today.has(file), `${file} of ${name} is still in migrations/ under its number and name`).toBe(true);
    const now = today.get(file)!;
    if (now === content) continue;
    const difference = allowed[name]?.[file];
    expect(difference !== undefined && difference(content, now), `${file} differs from ${name}'s in no allowed way`).toBe(true);
  }
}

describe('released migrations', () => {
  it.each(previousVersions.map((v) => [v.name, v.commit] as const))(
    'of %s are all here, unchanged but for the documented differences',
    (name, commit) => {
      expectKept(name, commit);
    },
  );

  it("of 0391ec2, the last commit before the first release, are byte for byte today's", () => {
    const released = filesAt(previousVersions.find((v) => v.name === '0391ec2')!.commit);
    for (const [file, content] of released) expect(today.get(file), file).toBe(content);
  });

  it('of the last release tag, when this clone has one, are byte for byte today’s', () => {
    const tag = lastReleaseTag();
    if (tag === undefined) return; // a clone without tags: the pinned commits above still hold
    const released = filesAt(tag);
    for (const [file, content] of released) expect(today.get(file), `${file} of ${tag}`).toBe(content);
  });

  it('each number has one name, and every number any release used stays taken', () => {
    const numbers = new Map<string, string>();
    for (const file of today.keys()) {
      const [, number, name] = /^(\d+)_(.*)\.(?:up|down)\.sql$/.exec(file)!;
      expect(numbers.get(number!) ?? name, `${number} has one name`).toBe(name);
      numbers.set(number!, name!);
    }
    for (const { commit } of previousVersions) for (const file of filesAt(commit).keys()) expect(numbers.has(file.slice(0, 6))).toBe(true);
  });
});

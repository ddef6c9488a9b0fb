/**
 * The product's folders are layers, and imports run one way: down. A module imports its own
 * folder or a folder of a lower layer, never one beside or above it — so the pure rules import
 * nothing of ours, the transports know no process, and only the processes (and the tooling's
 * entry point) reach into activities/ and workflows/. Type-only imports count too: a type is a
 * dependency a reader must follow. docs/architecture.md, "Layers", draws the same house.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

/** Bottom to top. Folders of one layer do not import each other. */
const layers: readonly (readonly string[])[] = [
  ['domain'],
  ['src/async', 'src/observability'],
  ['src/process'],
  ['src/permissions'],
  ['src/db'],
  ['src/config'],
  ['src/tracing', 'src/transports', 'src/pacing'],
  ['temporal'],
  ['activities'],
  ['workflows'],
  ['src/api', 'src/bridge', 'src/worker'],
  ['src/admin'],
  ['src/main', 'src/testing.ts'],
  ['src/bin'],
];

const root = path.resolve(import.meta.dirname, '../..');
const rankOf = new Map(layers.flatMap((folders, rank) => folders.map((folder) => [folder, rank] as const)));

/** The layer folder a repository path belongs to: `src/<folder>` (or a file at src/'s root), else its top folder. */
function folderOf(file: string): string {
  const parts = file.split('/');
  return parts[0] === 'src' ? `src/${parts[1]}` : parts[0]!;
}

const productFiles = execFileSync('git', ['ls-files', 'src', 'domain', 'temporal', 'activities', 'workflows'], { cwd: root, encoding: 'utf8' })
  .split('\n')
  .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'));

/** Relative imports of a file (static, dynamic, type-only and re-exports), as repository paths. */
function importsOf(file: string): string[] {
  const source = readFileSync(path.join(root, file), 'utf8');
  return [...source.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)'(\.{1,2}\/[^']+)'/g)].map((m) =>
    path.posix.normalize(path.posix.join(path.posix.dirname(file), m[1]!)),
  );
}

describe('the layers', () => {
  it('place every product folder', () => {
    const unplaced = [...new Set(productFiles.map(folderOf))].filter((folder) => !rankOf.has(folder));
    expect(unplaced, 'folders without a layer: add them to the table (and to docs/architecture.md)').toEqual([]);
  });

  it('are imported downward only', () => {
    const upward = productFiles.flatMap((file) =>
      importsOf(file).flatMap((target) => {
        const [from, to] = [folderOf(file), folderOf(target)];
        if (from === to) return [];
        const [fromRank, toRank] = [rankOf.get(from), rankOf.get(to)];
        return fromRank !== undefined && toRank !== undefined && toRank < fromRank ? [] : [`${file} → ${target}`];
      }),
    );
    expect(upward, 'imports beside or up a layer').toEqual([]);
  });

  it('keep src/ to entry points and folders', () => {
    const loose = productFiles.filter((f) => f.split('/').length === 2 && f.startsWith('src/'));
    expect(loose).toEqual(['src/testing.ts']);
  });
});

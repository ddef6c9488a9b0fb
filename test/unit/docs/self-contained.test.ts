/**
 * The repository stands on its own, and its comments say what must stay true.
 *
 * - No tracked file (test fixtures aside) points outside the repository: no link to the
 *   shared folder beside it, no numbered section of a design or contract kept elsewhere.
 *   The design is docs/design.md; a reference names one of its sections ("docs/design.md,
 *   Wakes", or a link to `design.md#wakes`), and that section must exist.
 * - No code or document cites an issue number (the benchmark's results and report included):
 *   a comment states the invariant and its reason, and the history of a line belongs in its
 *   commit message.
 * - A file a product comment or a document names by path exists.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { projectRoot } from '../../../src/process/paths.js';

/** Where the product's code lives: what the production build and the image hold. */
const productDirs = ['src/', 'activities/', 'workflows/', 'temporal/', 'migrations/', 'deploy/'];

/** Recorded data, not prose: replayed workflow histories and the like. */
const isFixture = (file: string): boolean => file.startsWith('test/') && /(^|\/)(fixtures|histories)\//.test(file) && !file.endsWith('.ts');

const outsideReferences: readonly { readonly name: string; readonly pattern: RegExp }[] = [
  { name: 'a link to the shared folder beside the repository', pattern: /\.\.\/(\.\.\/)*shared\b/ },
  { name: 'a numbered section of the design or the contract', pattern: /\b(design|contract) \u00a7/i },
];

/** "issue 12", "issues 12, 13", "Issue #7", "(#12)". */
const issueCitation = /\bissues? +#?\d+|(^|[\s(])#\d+\b/i;

function trackedFiles(): string[] {
  const out = execFileSync('git', ['ls-files', '-z'], { cwd: projectRoot, encoding: 'utf8' });
  return out.split('\0').filter((file) => file !== '' && existsSync(path.join(projectRoot, file)));
}

/** The file's text, or undefined for binary files (a NUL byte) and what cannot be read. */
function text(file: string): string | undefined {
  try {
    const content = readFileSync(path.join(projectRoot, file), 'utf8');
    return content.includes('\0') ? undefined : content;
  } catch {
    return undefined;
  }
}

/** Every line of `files` matching `pattern`, as `file:line: text`. */
function offenders(files: readonly string[], pattern: RegExp): string[] {
  const found: string[] = [];
  for (const file of files) {
    const content = text(file);
    if (content === undefined) continue;
    content.split('\n').forEach((line, i) => {
      if (pattern.test(line)) found.push(`${file}:${i + 1}: ${line.trim()}`);
    });
  }
  return found;
}

/** The section titles of docs/design.md and their anchors as GitHub renders them. */
function designSections(): { readonly titles: string[]; readonly anchors: Set<string> } {
  const headings = readFileSync(path.join(projectRoot, 'docs/design.md'), 'utf8')
    .split('\n')
    .filter((line) => /^#{2,4} /.test(line))
    .map((line) => line.replace(/^#+ /, '').trim());
  const anchor = (title: string): string =>
    title
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, '')
      .replace(/ /g, '-');
  return { titles: headings, anchors: new Set(headings.map(anchor)) };
}

const files = trackedFiles();
const notFixtures = files.filter((file) => !isFixture(file));
const product = files.filter((file) => productDirs.some((dir) => file.startsWith(dir)));

describe('the repository stands on its own', () => {
  it('lists its files (git ls-files)', () => {
    expect(files).toContain('docs/design.md');
    expect(product.length).toBeGreaterThan(50);
  });

  it.each(outsideReferences)('no tracked file outside test fixtures holds $name', ({ pattern }) => {
    expect(offenders(notFixtures, pattern)).toEqual([]);
  });

  it('every reference to a section of docs/design.md names one that exists', () => {
    const { titles } = designSections();
    const broken: string[] = [];
    for (const file of notFixtures) {
      const content = text(file);
      if (content === undefined) continue;
      content.split('\n').forEach((line, i) => {
        for (const match of line.matchAll(/docs\/design\.md, +([^\n]*)/g)) {
          const rest = match[1]!;
          if (!titles.some((title) => rest.startsWith(title))) broken.push(`${file}:${i + 1}: ${line.trim()}`);
        }
      });
    }
    expect(broken).toEqual([]);
  });

  it('every link into docs/design.md names an anchor that exists', () => {
    const { anchors } = designSections();
    const broken: string[] = [];
    for (const file of notFixtures) {
      const content = text(file);
      if (content === undefined) continue;
      for (const match of content.matchAll(/design\.md#([\w-]+)/g)) if (!anchors.has(match[1]!)) broken.push(`${file}: #${match[1]}`);
    }
    expect(broken).toEqual([]);
  });
});

describe('product code states invariants, not history', () => {
  it('cites no issue number', () => {
    expect(offenders(product, issueCitation)).toEqual([]);
  });

  it('nor do the tests, the tooling and the docs', () => {
    const rest = notFixtures.filter((file) => !product.includes(file) && file !== 'test/unit/docs/self-contained.test.ts');
    expect(offenders(rest, /\bissues? +#?\d+/i)).toEqual([]); // "#1" is sample output there (push-admin's registration ids)
  });

  it('names only files that exist', () => {
    const scope = files.filter(
      (file) => (product.includes(file) || file.startsWith('docs/') || file === 'README.md') && /\.(ts|sql|md|yaml|tpl|sh)$/.test(file),
    );
    const basenames = new Set(files.map((file) => path.posix.basename(file)));
    const exists = (from: string, named: string): boolean =>
      files.includes(named) ||
      files.includes(path.posix.normalize(path.posix.join(path.posix.dirname(from), named))) ||
      (named.includes('/') ? files.some((file) => file.endsWith('/' + named)) : basenames.has(named));
    const missing: string[] = [];
    for (const file of scope) {
      const content = text(file);
      if (content === undefined) continue;
      content.split('\n').forEach((line, i) => {
        for (const match of line.matchAll(/(?<![\w./-])((?:[\w.-]+\/)*[\w-]+\.(?:ts|sql|md))\b/g))
          if (!exists(file, match[1]!)) missing.push(`${file}:${i + 1}: ${match[1]}`);
      });
    }
    expect(missing).toEqual([]);
  });
});

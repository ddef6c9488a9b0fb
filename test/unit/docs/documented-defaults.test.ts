/**
 * The README's configuration table is what operators set a deployment from: every variable a
 * process reads is in it (or in docs/operations.md's production connections), the table is one
 * table, and a documented default is the code's — setting a variable to its documented default
 * changes nothing in the configuration a process reads. docs/design.md's tables are held to the
 * code the same way.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { processes } from '../../../src/config/processes.js';
import type { Section } from '../../../src/config/section.js';

const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');
const operations = readFileSync(new URL('../../../docs/operations.md', import.meta.url), 'utf8');
const design = readFileSync(new URL('../../../docs/design.md', import.meta.url), 'utf8');

/** The lines of a markdown section, from its heading to the next heading of the same or a higher level. */
function sectionLines(markdown: string, heading: string): string[] {
  const lines = markdown.split('\n');
  const start = lines.findIndex((l) => l.trim() === heading);
  if (start < 0) throw new Error(`no heading ${heading}`);
  const level = heading.indexOf(' ');
  const end = lines.findIndex((l, i) => i > start && /^#+ /.test(l) && l.indexOf(' ') <= level);
  return lines.slice(start + 1, end < 0 ? undefined : end);
}

interface Row {
  readonly names: readonly string[];
  readonly defaults: readonly string[] | undefined;
}

const backticked = (cell: string) => [...cell.matchAll(/`([^`]*)`/g)].map((m) => m[1]!);

/** The rows of a variable table: names from the first cell, concrete defaults (all backticked) from the second. */
function variableRows(lines: readonly string[]): Row[] {
  return lines
    .filter((l) => /^\|\s*`[A-Z]/.test(l))
    .map((l) => {
      const [, first = '', second = ''] = l.split('|');
      const names = backticked(first).filter((n) => /^[A-Z][A-Z0-9_]+$/.test(n));
      const values = backticked(second);
      const onlyValues = second.replace(/`[^`]*`/g, '').replace(/[,\s]/g, '') === '';
      return { names, defaults: values.length > 0 && onlyValues ? values : undefined };
    });
}

const configurationLines = sectionLines(readme, '### Configuration');
const readmeRows = variableRows(configurationLines);
const designRows = variableRows([...sectionLines(design, '## Configuration')]);
const documented = new Set([...readmeRows, ...variableRows(operations.split('\n'))].flatMap((r) => r.names));

const sections = [...new Set(Object.values(processes).flat())] as readonly Section<object>[];
const baseEnv = { DATABASE_URL: 'postgres://push@127.0.0.1:5432/zippchat', JWT_SECRET: 'documented-defaults-0123456789abcdef' };

describe('the configuration table', () => {
  it('is one table: no paragraph between its rows', () => {
    const tableLines = configurationLines.map((l, i) => ({ l, i })).filter(({ l }) => l.startsWith('|'));
    const first = tableLines[0]!.i;
    const last = tableLines.at(-1)!.i;
    const between = configurationLines.slice(first, last + 1).filter((l) => !l.startsWith('|'));
    expect(between, 'lines that split the table').toEqual([]);
  });

  it('names every variable a process reads', () => {
    const read = [...new Set(sections.flatMap((s) => s.variables))];
    expect(read.filter((name) => !documented.has(name))).toEqual([]);
  });

  it('documents only variables some process reads', () => {
    const read = new Set(sections.flatMap((s) => s.variables));
    expect(readmeRows.flatMap((r) => r.names).filter((name) => !read.has(name))).toEqual([]);
  });

  const withDefaults = [...readmeRows, ...designRows].flatMap((row) => {
    if (row.defaults === undefined) return [];
    if (row.defaults.length !== row.names.length && row.defaults.length !== 1) throw new Error(`defaults do not line up: ${row.names.join(', ')}`);
    return row.names.map((name, i) => [name, row.defaults![row.defaults!.length === 1 ? 0 : i]!] as const);
  });

  it.each(withDefaults)('gives %s the default the code has (%s)', (name, value) => {
    const readers = sections.filter((s) => s.variables.includes(name));
    expect(readers.length, `no process reads ${name}`).toBeGreaterThan(0);
    for (const s of readers) expect(s.read({ ...baseEnv, [name]: value })).toEqual(s.read(baseEnv));
  });
});

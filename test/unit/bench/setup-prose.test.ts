/**
 * The benchmark report's setup prose (bench/setup/*.md, bench/setup-prose.ts): every file
 * renders with values for its placeholders and leaves none unfilled, one line per paragraph;
 * the loader refuses a missing or an unused value, when the measure records it; and every
 * `setupProse` call in bench/ gives exactly the placeholders of its file — checked here, not at
 * the end of a benchmark run.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { placeholdersOf, renderProse, renderSetup, setupChapter, setupProse, setupProseDir } from '../../../bench/setup-prose.js';
import { projectRoot } from '../../../src/process/paths.js';

const setupFiles = readdirSync(setupProseDir)
  .filter((f) => f.endsWith('.md'))
  .map((f) => f.slice(0, -'.md'.length));

describe('renderProse', () => {
  const template = 'First {{count}} devices,\nwrapped over {{count}} lines.\n\nSecond paragraph, {{rate}} per second.\n';

  it('fills every placeholder, joins a paragraph’s lines with one space, keeps paragraphs apart', () => {
    expect(renderProse(template, { count: '1,000', rate: 12.5 }, 'sample.md')).toEqual([
      'First 1,000 devices, wrapped over 1,000 lines.',
      'Second paragraph, 12.5 per second.',
    ]);
  });

  it('refuses a placeholder without a value, naming the file and the placeholder', () => {
    expect(() => renderProse(template, { count: 1 }, 'sample.md')).toThrow('sample.md: no value for {{rate}}');
  });

  it('refuses a value no placeholder uses', () => {
    expect(() => renderProse(template, { count: 1, rate: 2, seconds: 3 }, 'sample.md')).toThrow('sample.md: values given but not used: seconds');
  });

  it('refuses a malformed placeholder and a stray brace pair', () => {
    expect(() => renderProse('a {{two words}} b', {}, 'sample.md')).toThrow('malformed placeholder {{two words}}');
    expect(() => renderProse('a {{count} b', {}, 'sample.md')).toThrow('unmatched');
  });

  it('takes single braces as text', () => {
    expect(renderProse('`dist/src/bin/{api,worker}.js`', {}, 'sample.md')).toEqual(['`dist/src/bin/{api,worker}.js`']);
  });
});

describe('bench/setup/*.md', () => {
  it.each(setupFiles)('%s renders with a value for each placeholder, none left unfilled', (name) => {
    const template = readFileSync(path.join(setupProseDir, `${name}.md`), 'utf8');
    const values = Object.fromEntries(placeholdersOf(template, name).map((n, i) => [n, `value-${i}`]));
    const paragraphs = renderSetup(setupProse(name, values));
    expect(paragraphs.length).toBeGreaterThan(0);
    for (const paragraph of paragraphs) {
      expect(paragraph).not.toMatch(/\{\{|\}\}/);
      expect(paragraph).not.toContain('\n');
      expect(paragraph).not.toMatch(/ {2}/);
    }
    for (const value of Object.values(values)) expect(paragraphs.join('\n')).toContain(value);
  });
});

describe('setupProse', () => {
  it('records the file and its values for the report, and refuses values that do not fit the file at once', () => {
    expect(setupProse('claim', { devices: 200, rounds: 20 })).toEqual({ file: 'claim', values: { devices: 200, rounds: 20 } });
    expect(() => setupProse('claim', { devices: 200 })).toThrow('bench/setup/claim.md: no value for {{rounds}}');
  });
});

describe('bench/setup/chapters/*.md', () => {
  it('keeps a chapter as it is: its tables line by line', () => {
    const chapter = setupChapter('pacing-tuning');
    expect(chapter).toMatch(/^\| the pacer \| DM p99 \| wakes per second \|$/m);
    expect(chapter).not.toMatch(/\{\{/);
  });
});

describe('the setupProse calls in bench/', () => {
  const calls = setupProseCalls();

  it('name an existing file, and every file is used', () => {
    expect(calls.length).toBeGreaterThan(0);
    for (const call of calls) expect(setupFiles, `${call.where} names ${call.name}`).toContain(call.name);
    expect([...new Set(calls.map((c) => c.name))].sort()).toEqual([...setupFiles].sort());
  });

  it('give exactly the placeholders of their file', () => {
    for (const call of calls) {
      const template = readFileSync(path.join(setupProseDir, `${call.name}.md`), 'utf8');
      expect([...call.keys].sort(), `${call.where}: setupProse('${call.name}', …)`).toEqual(placeholdersOf(template, call.name).sort());
    }
  });
});

/** Every `setupProse('<name>', { … })` in bench/**.ts: its file name and the keys of its values (an object literal). */
function setupProseCalls(): { name: string; keys: string[]; where: string }[] {
  const benchDir = path.join(projectRoot, 'bench');
  const files = readdirSync(benchDir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
  const found: { name: string; keys: string[]; where: string }[] = [];
  for (const file of files) {
    const source = ts.createSourceFile(file, readFileSync(path.join(benchDir, file), 'utf8'), ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node) => {
      if (ts.isCallExpression(node) && node.expression.getText(source) === 'setupProse') {
        const where = `bench/${file}:${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1}`;
        const [name, values] = node.arguments;
        if (name === undefined || !ts.isStringLiteral(name)) throw new Error(`${where}: the file name must be a string literal`);
        if (values !== undefined && !ts.isObjectLiteralExpression(values)) throw new Error(`${where}: the values must be an object literal`);
        const keys = (values?.properties ?? []).map((p) => {
          if (p.name === undefined || !(ts.isIdentifier(p.name) || ts.isStringLiteral(p.name)))
            throw new Error(`${where}: a value without a plain name`);
          return p.name.text;
        });
        found.push({ name: name.text, keys, where });
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found;
}

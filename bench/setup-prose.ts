/**
 * How each measurement was made, for the report: markdown files under bench/setup/ (read from
 * the repository, so dist-tools finds them too), with the run's numbers filled in. A measure
 * records which file and which numbers (`setupProse`); the report renders them when it is
 * written (`renderSetup`), so the page always says what bench/setup/ says now, also of a
 * section kept from an earlier run.
 *
 * A file's paragraphs are separated by blank lines; the lines of one paragraph are joined with
 * one space, so a file wraps its prose where it likes and the report still gets one line per
 * paragraph. `{{name}}` (a letter, then letters and digits) is a placeholder. Every placeholder
 * must have a value and every value given must fill a placeholder: a mismatch is a mistake in
 * the measure or in the file, and it fails the measurement rather than print a hole or drop a
 * number.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../src/testing.js';

/** The values a file's placeholders take, already formatted (a number is written with `String`). */
export type ProseValues = Readonly<Record<string, string | number>>;

/** A setup file and the values of its placeholders, as the results keep them. */
export interface SetupProse {
  /** bench/setup/`file`.md */
  readonly file: string;
  readonly values: ProseValues;
}

export const setupProseDir = path.join(projectRoot, 'bench', 'setup');

const placeholder = /\{\{([^{}]*)\}\}/g;
const placeholderName = /^[A-Za-z][A-Za-z0-9]*$/;

/**
 * A chapter of the report kept as markdown as it is (tables and all), from
 * bench/setup/chapters/`name`.md: prose that no measurement fills in, such as a log of measured
 * steps whose numbers are of earlier runs.
 */
export function setupChapter(name: string): string {
  return readFileSync(path.join(setupProseDir, 'chapters', `${name}.md`), 'utf8')
    .replace(/\r\n/g, '\n')
    .trim();
}

/**
 * bench/setup/`name`.md with `values`, for the report to render; checked now, so that a
 * mismatch fails the measurement that made it rather than the report.
 */
export function setupProse(name: string, values: ProseValues = {}): SetupProse {
  const prose = { file: name, values };
  renderSetup(prose);
  return prose;
}

/** The paragraphs of a setup file with its values filled in; throws when they do not fit the file as it is now. */
export function renderSetup(prose: SetupProse): string[] {
  const file = path.join(setupProseDir, `${prose.file}.md`);
  return renderProse(readFileSync(file, 'utf8'), prose.values, path.relative(projectRoot, file));
}

/** The placeholder names of a template, each once, in order of first use; throws on a malformed one. */
export function placeholdersOf(template: string, source: string): string[] {
  const names = [...template.matchAll(placeholder)].map((m) => m[1]!);
  const malformed = names.filter((n) => !placeholderName.test(n));
  if (malformed.length > 0) throw new Error(`${source}: malformed placeholder ${malformed.map((n) => `{{${n}}}`).join(', ')}`);
  const stray = template.replace(placeholder, '');
  if (stray.includes('{{') || stray.includes('}}')) throw new Error(`${source}: an unmatched "{{" or "}}"`);
  return [...new Set(names)];
}

/** `template`'s paragraphs with every placeholder replaced by its value; `source` names the file in errors. */
export function renderProse(template: string, values: ProseValues, source: string): string[] {
  const names = placeholdersOf(template, source);
  const missing = names.filter((n) => !Object.hasOwn(values, n));
  const unused = Object.keys(values).filter((n) => !names.includes(n));
  const problems = [
    ...(missing.length > 0 ? [`no value for ${missing.map((n) => `{{${n}}}`).join(', ')}`] : []),
    ...(unused.length > 0 ? [`values given but not used: ${unused.join(', ')}`] : []),
  ];
  if (problems.length > 0) throw new Error(`${source}: ${problems.join('; ')} (its placeholders: ${names.join(', ') || 'none'})`);
  return template
    .replace(/\r\n/g, '\n')
    .split(/\n[ \t]*\n/)
    .map((paragraph) =>
      paragraph
        .split('\n')
        .map((line) => line.trim())
        .filter((line) => line !== '')
        .join(' '),
    )
    .filter((paragraph) => paragraph !== '')
    .map((paragraph) => paragraph.replace(placeholder, (_, name: string) => String(values[name])));
}

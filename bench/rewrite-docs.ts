/**
 * `npm run -s bench-report`: rewrites docs/benchmarks.md from the committed results
 * (bench/results/summary.json) and the setup prose of bench/setup/, without running a
 * benchmark — after editing a setup file, say. `make bench` writes the page itself.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../src/testing.js';
import { benchmarksMarkdown } from './report-markdown.js';
import { readResults, summaryFile } from './results.js';

try {
  const summary = readResults(summaryFile);
  if (summary === undefined) throw new Error(`no ${path.relative(projectRoot, summaryFile)}: run make bench`);
  writeFileSync(path.join(projectRoot, 'docs', 'benchmarks.md'), benchmarksMarkdown(summary));
} catch (error) {
  process.stderr.write(`bench-report: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}

/**
 * Prints, after vitest's own summary, one line per failed test (and per failed hook or file)
 * with its first error line, plus the slowest files. CI keeps only the tail of a run's output:
 * this puts what failed, and where the time went, inside that tail.
 */
import type { Reporter, TestModule } from 'vitest/node';

const firstLine = (message: unknown) =>
  String(message ?? '')
    .split('\n')[0]!
    .slice(0, 240);

export default class FailureSummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<unknown>): void {
    const lines: string[] = [];
    for (const module of testModules) {
      const where = `${module.project.name} ${module.relativeModuleId}`;
      for (const error of module.errors()) lines.push(`${where}: ${firstLine(error.message)}`);
      for (const test of module.children.allTests('failed')) {
        const duration = Math.round(test.diagnostic()?.duration ?? 0);
        lines.push(`${where} > ${test.fullName} (${duration} ms): ${firstLine(test.result().errors?.[0]?.message)}`);
      }
    }
    for (const error of unhandledErrors) lines.push(`unhandled: ${firstLine((error as { message?: unknown })?.message ?? error)}`);

    const slowest = [...testModules]
      .map((module) => ({ name: `${module.project.name} ${module.relativeModuleId}`, ms: Math.round(module.diagnostic().duration) }))
      .sort((a, b) => b.ms - a.ms)
      .slice(0, 5);
    const out = ['', 'slowest files: ' + slowest.map(({ name, ms }) => `${name} ${(ms / 1000).toFixed(1)} s`).join(', ')];
    if (lines.length > 0) out.push(`${lines.length} failure(s):`, ...lines.map((line) => `  ${line}`));
    process.stdout.write(out.join('\n') + '\n');
  }
}

/**
 * The chart's alert rules (deploy/helm/zippchat-push/files/alert-rules.yaml) with Prometheus's
 * own checker, built from its Go module like helm (tools/go-tools.txt): `promtool check rules`
 * (syntax, expressions, templates), and `promtool test rules` with test/deploy/alert-rules.test.yaml
 * — series on which each alert fires and series on which it must not. Every alert has both
 * kinds of case there, or this fails naming it. (That the docs' alert table names the same
 * alerts is test/unit/docs/alert-rules.test.ts.)
 */
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { projectRoot } from '../../src/process/paths.js';
import { chartDir, runTool, tool } from './chart.js';

const rulesFile = path.join(chartDir, 'files', 'alert-rules.yaml');
const testsFile = path.join(projectRoot, 'test', 'deploy', 'alert-rules.test.yaml');

interface RuleFile {
  groups: Array<{ name: string; rules: Array<{ alert: string; annotations?: Record<string, string> }> }>;
}
interface RuleTests {
  tests: Array<{ name: string; alert_rule_test?: Array<{ alertname: string; exp_alerts?: unknown[] }> }>;
}

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'alert-rules-'));
  // promtool compares annotations exactly: its tests run against the rules without them.
  const rules = parse(readFileSync(rulesFile, 'utf8')) as RuleFile;
  for (const group of rules.groups) for (const rule of group.rules) delete rule.annotations;
  writeFileSync(path.join(dir, 'alert-rules.yaml'), stringify(rules));
  copyFileSync(testsFile, path.join(dir, 'alert-rules.test.yaml'));
});
afterAll(() => {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe("the chart's alert rules, checked by promtool", () => {
  it('are valid rules: expressions, durations, label and annotation templates', async () => {
    const out = await runTool(tool('promtool'), ['check', 'rules', rulesFile], { PATH: process.env.PATH });
    expect(out.code, out.stdout + out.stderr).toBe(0);
    const alerts = (parse(readFileSync(rulesFile, 'utf8')) as RuleFile).groups.flatMap((g) => g.rules);
    expect(out.stdout).toContain(`SUCCESS: ${alerts.length} rules found`);
  });

  it('fire on the series they are for, and stay silent on the others (promtool test rules)', async () => {
    const out = await runTool(tool('promtool'), ['test', 'rules', 'alert-rules.test.yaml'], { PATH: process.env.PATH }, dir);
    expect(out.code, out.stdout + out.stderr).toBe(0);
    expect(out.stdout).toContain('SUCCESS');
  });

  it('every alert has a case where it fires and one where it stays silent', () => {
    const alerts = (parse(readFileSync(rulesFile, 'utf8')) as RuleFile).groups.flatMap((g) => g.rules.map((r) => r.alert));
    const cases = (parse(readFileSync(testsFile, 'utf8')) as RuleTests).tests.flatMap((t) => t.alert_rule_test ?? []);
    const firing = new Set(cases.filter((c) => (c.exp_alerts ?? []).length > 0).map((c) => c.alertname));
    const silent = new Set(cases.filter((c) => (c.exp_alerts ?? []).length === 0).map((c) => c.alertname));
    expect(
      alerts.filter((a) => !firing.has(a)),
      'alerts without a case in test/deploy/alert-rules.test.yaml where they fire',
    ).toEqual([]);
    expect(
      alerts.filter((a) => !silent.has(a)),
      'alerts without a case in test/deploy/alert-rules.test.yaml where they stay silent',
    ).toEqual([]);
  });
});

/**
 * docs/operations.md's alert table and the chart's rules file
 * (deploy/helm/zippchat-push/files/alert-rules.yaml) describe the same alerts: a row without its
 * rule, or a rule without its row, fails here by name, and so does a rule whose expression,
 * `for`, severity, runbook entry or metric names drifted from the docs or the code.
 * (`promtool check rules` and `promtool test rules` run in the deploy tier: test/deploy/alert-rules.test.ts.)
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import '../../../activities/metrics.js';
import '../../../src/api/metrics.js';
import '../../../src/bridge/metrics.js';
import '../../../src/worker/registration-gauges.js';
import '../../../src/worker/wedged-gauge.js';
import '../../../src/transports/metrics.js';
import { registry } from '../../../src/observability/metrics.js';
import { projectRoot } from '../../../src/process/paths.js';

const docsFile = path.join(projectRoot, 'docs', 'operations.md');
const rulesFile = path.join(projectRoot, 'deploy', 'helm', 'zippchat-push', 'files', 'alert-rules.yaml');
const runbookBase = 'https://github.com/zippchat/zippchat-push/blob/main/docs/operations.md';

interface DocumentedAlert {
  readonly name: string;
  /** `(page)`: always; `(page for FCM)`: for some of its series; undefined: never. */
  readonly page: 'always' | 'some' | undefined;
  readonly expr: string;
  readonly for: string;
}

interface Rule {
  readonly alert: string;
  readonly expr: string;
  readonly for?: string;
  readonly labels?: Record<string, string>;
  readonly annotations?: Record<string, string>;
}

/** The rows of the table under "## Alerts worth setting". */
function documentedAlerts(markdown: string): DocumentedAlert[] {
  const section = markdown.split('\n## Alerts worth setting\n')[1]?.split('\n## ')[0] ?? '';
  const rows = section.split('\n').filter((line) => line.startsWith('| ') && !line.startsWith('| alert |') && !line.startsWith('| ---'));
  return rows.map((row) => {
    // Cells are split at unescaped pipes; a PromQL regex's `|` is written `\|` in the table.
    const [title, expr, forDuration] = row
      .split(/(?<!\\)\|/)
      .slice(1, -1)
      .map((cell) => cell.trim().replace(/\\\|/g, '|'));
    const match = /^(?:\*\*)?(.+?)(?:\*\*)?(?: \((page(?: for [^)]+)?)\))?$/.exec(title ?? '');
    if (match === null || expr === undefined || forDuration === undefined) throw new Error(`docs/operations.md: an alert row I cannot read: ${row}`);
    const page = match[2] === undefined ? undefined : match[2] === 'page' ? 'always' : 'some';
    return { name: match[1]!, page, expr: expr.replace(/^`|`$/g, ''), for: forDuration };
  });
}

/** `ZippchatPush` + the name in CamelCase: "Wakes not sent: configuration" → ZippchatPushWakesNotSentConfiguration. */
export function alertName(documented: string): string {
  const words = documented.split(/[^A-Za-z0-9]+/).filter((w) => w !== '');
  return `ZippchatPush${words.map((w) => w[0]!.toUpperCase() + w.slice(1)).join('')}`;
}

/** The anchor GitHub gives a heading. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\w\- ]/g, '')
    .replace(/ /g, '-');
}

const normalized = (expr: string) => expr.replace(/\s+/g, ' ').trim();

const markdown = readFileSync(docsFile, 'utf8');
const documented = documentedAlerts(markdown);
const rules: Rule[] = (parse(readFileSync(rulesFile, 'utf8')) as { groups: Array<{ rules: Rule[] }> }).groups.flatMap((g) => g.rules);
const ruleOf = new Map(rules.map((r) => [r.alert, r]));

describe("docs/operations.md's alerts and the chart's rules file", () => {
  it('name the same alerts', () => {
    expect(documented.length).toBeGreaterThan(20);
    const missingRules = documented.filter((d) => !ruleOf.has(alertName(d.name))).map((d) => `"${d.name}" (rule ${alertName(d.name)})`);
    expect(missingRules, 'alerts of docs/operations.md without a rule in deploy/helm/zippchat-push/files/alert-rules.yaml').toEqual([]);
    const documentedNames = new Set(documented.map((d) => alertName(d.name)));
    const undocumented = rules.map((r) => r.alert).filter((name) => !documentedNames.has(name));
    expect(undocumented, "rules of files/alert-rules.yaml without a row in docs/operations.md's alert table").toEqual([]);
    expect(new Set(rules.map((r) => r.alert)).size, 'one rule per alert').toBe(rules.length);
  });

  it.each(documented.map((d) => [d.name, d] as const))('%s: the same expression, `for` and severity, and its summary', (_name, alert) => {
    const rule = ruleOf.get(alertName(alert.name));
    if (rule === undefined) return; // named by the test above
    expect(normalized(rule.expr), `${rule.alert}: expr`).toBe(normalized(alert.expr));
    expect(rule.for ?? '0m', `${rule.alert}: for`).toBe(alert.for);
    const severity = rule.labels?.severity ?? '';
    if (alert.page === 'always') expect(severity).toBe('critical');
    else if (alert.page === 'some') expect(severity).toMatch(/critical.*warning|warning.*critical/);
    else expect(severity).toBe('warning');
    expect(rule.annotations?.summary).toBe(alert.name);
    expect(rule.annotations?.description ?? '').not.toBe('');
  });

  it('point each runbook_url at an entry of the alert under "Runbooks" in docs/operations.md', () => {
    const runbooks = markdown.split('\n### Runbooks\n')[1]?.split('\n## ')[0] ?? '';
    const entries = new Set([...runbooks.matchAll(/^#### (.+)$/gm)].map((m) => m[1]!.trim()));
    for (const alert of documented) {
      const rule = ruleOf.get(alertName(alert.name));
      expect(entries.has(alert.name), `docs/operations.md has no runbook entry "#### ${alert.name}"`).toBe(true);
      expect(rule?.annotations?.runbook_url, `${alertName(alert.name)}: runbook_url`).toBe(`${runbookBase}#${anchorOf(alert.name)}`);
    }
  });

  it("query only metrics this service registers (the Temporal SDK's and Prometheus's own aside)", async () => {
    const registered = new Map((await registry.getMetricsAsJSON()).map((m) => [m.name, String(m.type)]));
    const used = [...new Set(rules.flatMap((r) => [...r.expr.matchAll(/\bpush_[a-z_]+\b/g)].map((m) => m[0])))];
    expect(used.length).toBeGreaterThan(15);
    for (const name of used) {
      const base = name.replace(/_(bucket|count|sum)$/, '');
      const known = registered.has(name) || (base !== name && registered.get(base) === 'histogram');
      expect(known, `${name} (in an alert rule) is not a registered metric`).toBe(true);
    }
  });
});

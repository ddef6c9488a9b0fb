/** The metric names the queries of docs/grafana-dashboard.json mention (used by the unit and the metrics integration test). */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../../src/process/paths.js';

export function dashboardMetricNames(prefix: RegExp): string[] {
  const dashboard = JSON.parse(readFileSync(path.join(projectRoot, 'docs', 'grafana-dashboard.json'), 'utf8')) as {
    panels: Array<{ targets?: Array<{ expr: string }> }>;
  };
  const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
  return [...new Set(exprs.flatMap((e) => [...e.matchAll(/\b[a-z_]+\b/g)].map((m) => m[0]).filter((n) => prefix.test(n))))];
}

/**
 * docs/grafana-dashboard.json queries exactly the metrics the processes register: a renamed
 * metric must fail here, not leave an empty panel in production. (The Temporal SDK's
 * `temporal_*` names are checked against a live scrape in test/integration/stack/metrics.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import '../../../activities/metrics.js';
import '../../../src/api/metrics.js';
import '../../../src/bridge/metrics.js';
import '../../../src/worker/registration-gauges.js';
import '../../../src/worker/wedged-gauge.js';
import '../../../src/transports/metrics.js';
import { registry } from '../../../src/observability/metrics.js';
import { dashboardMetricNames } from './dashboard-names.js';

describe('the Grafana dashboard', () => {
  it('uses only metric names this service registers', async () => {
    const registered = new Map((await registry.getMetricsAsJSON()).map((m) => [m.name, String(m.type)]));
    const used = dashboardMetricNames(/^push_/);
    expect(used.length).toBeGreaterThan(15);
    for (const name of used) {
      const base = name.replace(/_(bucket|count|sum)$/, '');
      const known = registered.has(name) || (base !== name && registered.get(base) === 'histogram');
      expect(known, `${name} is not a registered metric`).toBe(true);
    }
  });

  it('shows every metric family of the service', async () => {
    const used = new Set(dashboardMetricNames(/^push_/).map((n) => n.replace(/_(bucket|count|sum)$/, '')));
    const unused = (await registry.getMetricsAsJSON()).map((m) => m.name).filter((n) => /^push_/.test(n) && !used.has(n));
    expect(unused).toEqual([]);
  });
});

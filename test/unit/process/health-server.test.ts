/**
 * The worker's and the bridge's operations listener answers every request, even when a
 * metrics collector fails or a readiness check throws: a scrape or a probe must never leave a
 * rejection nobody handles (which ends a Node process).
 */
import { Gauge } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { registry } from '../../../src/observability/metrics.js';
import { startOpsServer, type OpsServer } from '../../../src/process/health-server.js';

let server: OpsServer | undefined;
afterEach(async () => {
  registry.removeSingleMetric('push_test_failing_collector');
  await server?.close();
  server = undefined;
});

describe('ops server', () => {
  it('answers /metrics with 500 when a collector fails', async () => {
    new Gauge({
      name: 'push_test_failing_collector',
      help: 'fails when collected',
      registers: [registry],
      collect() {
        throw new Error('the collector failed');
      },
    });
    server = await startOpsServer('127.0.0.1', 0, {});
    const response = await fetch(`http://127.0.0.1:${server.port}/metrics`, { signal: AbortSignal.timeout(10_000) });
    expect(response.status).toBe(500);
    expect(await response.json()).toEqual({ error: 'internal', message: 'metrics could not be collected' });
  });
});

describe('ops server readiness', () => {
  it('answers /readyz with 503 naming the failing check when a check throws instead of rejecting', async () => {
    server = await startOpsServer('127.0.0.1', 0, {
      postgres: async () => undefined,
      temporal: () => {
        throw new TypeError('worker.getState is not a function');
      },
    });
    const response = await fetch(`http://127.0.0.1:${server.port}/readyz`, { signal: AbortSignal.timeout(10_000) });
    expect(response.status).toBe(503);
    expect(await response.json()).toEqual({ status: 'not_ready', checks: { postgres: 'ok', temporal: 'failing' } });
  });
});

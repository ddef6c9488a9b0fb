/** The api's Prometheus metrics, registered on the process registry served at `/metrics`. */
import { Counter, Histogram } from 'prom-client';
import { registry } from '../metrics.js';

export const requestDuration = new Histogram({
  name: 'push_api_request_duration_seconds',
  help: 'API request latency by route (the route pattern, never the raw path), method and status.',
  labelNames: ['route', 'method', 'status'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
  registers: [registry],
});

export const registrations = new Counter({
  name: 'push_api_registrations_total',
  help: 'PUT /api/push/registration by outcome: created, refreshed (same transport), switched (transport changed), rejected (the body broke a rule: 400, 413 or 415).',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

export const temporalAnnounceFailures = new Counter({
  name: 'push_api_temporal_announce_failures_total',
  help: 'Workflow announcements (registered, drained, deleted) that did not reach Temporal after the change committed; the bridge and maintenance heal them.',
  labelNames: ['announcement'] as const,
  registers: [registry],
});

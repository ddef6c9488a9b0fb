/** The api's Prometheus metrics, registered on the process registry served at `/metrics`. */
import { Counter, Histogram } from 'prom-client';
import { registry } from '../observability/metrics.js';

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

export const temporalSignalFailures = new Counter({
  name: 'push_api_temporal_signal_failures_total',
  help: "Signals to workflows (deleted; pending: a test wake) that did not reach Temporal after the change committed; a deleted registration's workflow ends at its next look or by maintenance, a test wake is asked for again.",
  labelNames: ['signal'] as const,
  registers: [registry],
});

export const rateLimited = new Counter({
  name: 'push_api_rate_limited_total',
  help: 'Requests refused with 429 by the per-user limit.',
  registers: [registry],
});

export const rateLimitWaits = new Counter({
  name: 'push_api_rate_limit_waits_total',
  help: 'Requests that waited for the next synchronisation of the shared per-user limit (a user past its free admissions without a lease).',
  registers: [registry],
});

export const rateLimitDegraded = new Counter({
  name: 'push_api_rate_limit_alone_total',
  help: 'Requests this replica decided alone because the shared count in PostgreSQL did not answer.',
  registers: [registry],
});

export const rateLimitSyncs = new Counter({
  name: 'push_api_rate_limit_syncs_total',
  help: 'Synchronisations of the shared per-user limit with PostgreSQL, by outcome (ok, failed).',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

export const rateLimitSyncSeconds = new Histogram({
  name: 'push_api_rate_limit_sync_seconds',
  help: 'Duration of one synchronisation statement of the shared per-user limit.',
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
  registers: [registry],
});

export const wakeReports = new Counter({
  name: 'push_drain_wake_reports_total',
  help: 'What phones reported on draining of the wake that woke them (POST /api/push/drain with "wake"), by transport, the priority it was sent with (original_priority) and the one it arrived with (priority). original_priority="high", priority="normal": a HIGH wake FCM lowered.',
  labelNames: ['transport', 'original_priority', 'priority'] as const,
  registers: [registry],
});

/** From seconds to hours: a phone in Doze answers a NORMAL wake at its next maintenance window. */
const drainBuckets = [0.1, 0.25, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 900, 1800, 3600, 7200, 14_400];

export const messageToDrain = new Histogram({
  name: 'push_message_to_drain_seconds',
  help: "From a pending row's first message (its event's created_at) to the drain that took it, by the device's transport and the row's priority (high: a DM). Observed where the drain commits.",
  labelNames: ['transport', 'priority'] as const,
  buckets: drainBuckets,
  registers: [registry],
});

export const wakeToDrain = new Histogram({
  name: 'push_wake_to_drain_seconds',
  help: "From a wake's claim to the drain that cleared it, by transport and the wake's priority: how long phones take to answer a wake. Observed where the drain commits.",
  labelNames: ['transport', 'priority'] as const,
  buckets: drainBuckets,
  registers: [registry],
});

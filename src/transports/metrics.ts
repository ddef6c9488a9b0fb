/**
 * Transport metrics, registered on the process registry (`/metrics` of the worker): send
 * latency, the FCM access token, the FCM prune breaker, and the outage detector. Each wake is counted once, by the
 * send activity (`push_wakes_total`, activities/metrics.ts).
 * Labels are bounded: transport names and outcome kinds, never a token; the only origin label
 * is the outage gauge's, for at most 50 origins in outage at once.
 */
import { Counter, Gauge, Histogram } from 'prom-client';
import { registry } from '../observability/metrics.js';

export const sendDuration = new Histogram({
  name: 'push_transport_send_duration_seconds',
  help: 'Time from handing a wake to a transport to its outcome, by transport.',
  labelNames: ['transport'] as const,
  buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
});

export const breakerOpen = new Gauge({
  name: 'push_fcm_prune_breaker_open',
  help: '1 while the FCM prune breaker is open: token-related 400/403 answers no longer delete registrations.',
  registers: [registry],
});

export const breakerTrips = new Counter({
  name: 'push_fcm_prune_breaker_trips_total',
  help: 'Times the FCM prune breaker opened (an alert: look for a configuration or payload bug).',
  registers: [registry],
});

export const prunesWithheld = new Counter({
  name: 'push_fcm_prunes_withheld_total',
  help: 'FCM registrations not deleted because the prune breaker was open.',
  registers: [registry],
});

export const outageGauge = new Gauge({
  name: 'push_transport_outage',
  help: '1 for each origin the outage detector finds in outage (provider: fcm, fcm-oauth, unifiedpush; at most 50 origins are named, the rest summed under origin="(others)"). Failures there never count against devices; their wakes wait and go out when it ends.',
  labelNames: ['provider', 'origin'] as const,
  registers: [registry],
});

export const sendFailures = new Counter({
  name: 'push_transport_failures_total',
  help: 'Transient send failures, by transport and whether they counted toward the ten that prune a registration (counted: yes, no).',
  labelNames: ['transport', 'counted'] as const,
  registers: [registry],
});

export const outageDeferrals = new Counter({
  name: 'push_transport_outage_deferrals_total',
  help: 'Wakes held back unsent because their origin was in outage (each waits for the outage to end, or for its back-off).',
  labelNames: ['transport'] as const,
  registers: [registry],
});

export const tokenExpiry = new Gauge({
  name: 'push_fcm_token_expiry_timestamp_seconds',
  help: 'When the current FCM access token expires (Unix seconds). The worker fetches a new one 5 minutes before; a value that stops moving forward means refreshes fail and FCM wakes stop at that time.',
  registers: [registry],
});

export const tokenRefreshFailures = new Counter({
  name: 'push_fcm_token_refresh_failures_total',
  help: 'Failed fetches of the FCM access token from google-auth-library (each also logged with "alert":"fcm-token-refresh").',
  registers: [registry],
});

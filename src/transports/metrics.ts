/**
 * Transport metrics, registered on the process registry (`/metrics` of the worker):
 * sends by transport and outcome, send latency, and the FCM prune breaker.
 * Labels are bounded: transport names and the four outcome kinds, never a token or host.
 */
import { Counter, Gauge, Histogram } from 'prom-client';
import { registry } from '../metrics.js';

export const sendsTotal = new Counter({
  name: 'push_transport_sends_total',
  help: 'Wakes handed to a transport, by transport and outcome (delivered, dead, transient, config-error).',
  labelNames: ['transport', 'outcome'] as const,
  registers: [registry],
});

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

/** Metrics of what the worker does to devices. */
import { Counter } from 'prom-client';
import { registry } from '../src/metrics.js';

export const wakes = new Counter({
  name: 'push_wakes_total',
  help: 'Wakes attempted, by transport, priority and outcome (delivered, dead, transient, rate-limited, outage-deferred, config-error).',
  labelNames: ['transport', 'priority', 'outcome'] as const,
  registers: [registry],
});

export const prunes = new Counter({
  name: 'push_registrations_pruned_total',
  help: 'Registrations deleted by the service, by reason.',
  labelNames: ['reason'] as const,
  registers: [registry],
});

export const pendingRowsPruned = new Counter({
  name: 'push_pending_rows_pruned_total',
  help: 'push_pending rows deleted by maintenance because nobody touched them for 7 days.',
  registers: [registry],
});

export const processedEventsPruned = new Counter({
  name: 'push_processed_events_pruned_total',
  help: 'Counted-event ids forgotten by maintenance once the stream can no longer redeliver them.',
  registers: [registry],
});

export const healed = new Counter({
  name: 'push_registrations_healed_total',
  help: 'Stranded registrations (pending rows, no wake for longer than the re-wake interval) signalled by maintenance.',
  registers: [registry],
});

export const fcmWakesHeldBack = new Counter({
  name: 'push_fcm_wakes_held_back_total',
  help: 'Claims of an FCM wake refused by the per-device budget (PUSH_FCM_WAKE_BURST), by the priority the wake would have had: the wake waits for the budget, its rows stay pending.',
  labelNames: ['priority'] as const,
  registers: [registry],
});

export const rateLimitBackoffs = new Counter({
  name: 'push_rate_limit_backoffs_total',
  help: 'Wakes answered with a rate limit (UnifiedPush 429, FCM QUOTA_EXCEEDED) and backed off, by transport. Never counted as failures.',
  labelNames: ['transport'] as const,
  registers: [registry],
});

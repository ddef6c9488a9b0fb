/** Metrics of what the worker does to devices. */
import { Counter, Gauge, Histogram } from 'prom-client';
import { registry } from '../src/observability/metrics.js';

export const wakes = new Counter({
  name: 'push_wakes_total',
  help: 'Wakes attempted, by transport, priority, outcome (delivered, dead, misconfigured, deferred) and, for a deferred wake, its cause (failing, rate_limited, outage).',
  labelNames: ['transport', 'priority', 'outcome', 'cause'] as const,
  registers: [registry],
});

export const messageToWake = new Histogram({
  name: 'push_message_to_wake_seconds',
  help: "From a message's created_at (the chat server's event) to the delivery of the first wake for it, by priority (high: a DM). Re-wakes and wakes for older rows are not observed.",
  labelNames: ['priority'] as const,
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 15, 20, 30, 60, 120, 300, 900],
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

export const orphanWorkflowsEnded = new Counter({
  name: 'push_orphan_workflows_ended_total',
  help: 'Running registration workflows without a registration (a lost stop signal, a user deleted in the host database) told to end by maintenance.',
  registers: [registry],
});

export const missingWorkflowsStarted = new Counter({
  name: 'push_missing_workflows_started_total',
  help: 'Registrations without a running workflow (a lost start, a wiped Temporal namespace) given one by maintenance.',
  registers: [registry],
});

export const passCompleted = new Gauge({
  name: 'push_maintenance_pass_completed_timestamp_seconds',
  help: 'When each maintenance scan last completed a full pass over its table (or over the running workflows), by scan.',
  labelNames: ['scan'] as const,
  registers: [registry],
});

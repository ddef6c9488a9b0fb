/** Metrics of what the worker does to devices. */
import { Counter } from 'prom-client';
import { registry } from '../src/metrics.js';

export const wakes = new Counter({
  name: 'push_wakes_total',
  help: 'Wakes attempted, by transport, priority and outcome (delivered, dead, transient, config-error).',
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

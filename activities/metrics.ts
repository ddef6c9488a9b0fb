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

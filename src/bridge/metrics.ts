/** The bridge's Prometheus metrics, on the process registry (served at `/metrics`). */
import { Counter, Gauge, Histogram } from 'prom-client';
import { registry } from '../metrics.js';
import { WatchedPacers } from '../pacing/watched-pacers.js';

/** The pacers of this process's bridge replicas, shown in the pacing gauges (`watch`). */
export const bridgePacers = new WatchedPacers();

export type EventOutcome = 'counted' | 'duplicate' | 'malformed' | 'unknown_channel' | 'failed';

export const bridgeMetrics = {
  events: new Counter({
    name: 'push_bridge_events_total',
    help: 'MESSAGE_CREATE events handled, by outcome (failed ones are redelivered and counted again)',
    labelNames: ['outcome'] as const,
    registers: [registry],
  }),
  pendingRows: new Counter({
    name: 'push_bridge_pending_rows_total',
    help: 'push_pending rows written by counted events: created (the device is signalled) or updated',
    labelNames: ['change'] as const,
    registers: [registry],
  }),
  signals: new Counter({
    name: 'push_bridge_signals_total',
    help: 'pending signals (signal-with-start) to registration workflows, by result',
    labelNames: ['result'] as const,
    registers: [registry],
  }),
  batchSize: new Histogram({
    name: 'push_bridge_batch_events',
    help: 'Events of one channel recorded in one transaction',
    buckets: [1, 2, 4, 8, 16, 32, 64, 128],
    registers: [registry],
  }),
  duration: new Histogram({
    name: 'push_bridge_event_duration_seconds',
    help: 'Time from receiving an event to acknowledging it',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  }),
  lag: new Histogram({
    name: 'push_bridge_event_lag_seconds',
    help: "Time from an event's created_at to the bridge handling it",
    buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300, 1800, 3600, 86_400],
    registers: [registry],
  }),
  inFlight: new Gauge({
    name: 'push_bridge_events_in_flight',
    help: 'Events received and not yet acknowledged',
    registers: [registry],
  }),
  pacedSignals: new Gauge({
    name: 'push_bridge_paced_signals',
    help: "Server channels' signals waiting in the pacer for the workers' backlog to shrink",
    registers: [registry],
    collect() {
      this.set(bridgePacers.sum((v) => v.queued));
    },
  }),
  pacingWindow: new Gauge({
    name: 'push_bridge_pacing_window',
    help: "Server channels' signals the pacer lets be sent and not yet done by a worker",
    registers: [registry],
    collect() {
      this.set(bridgePacers.sum((v) => v.window));
    },
  }),
  backlogDelay: new Gauge({
    name: 'push_bridge_backlog_delay_seconds',
    help: "The workers' backlog as the pacer last sampled it: a signalled workflow's wait until its task was done",
    registers: [registry],
    collect() {
      const delays = bridgePacers.views().flatMap((v) => (v.lastDelayMs === undefined ? [] : [v.lastDelayMs]));
      this.set(delays.length === 0 ? 0 : Math.max(...delays) / 1000);
    },
  }),
};

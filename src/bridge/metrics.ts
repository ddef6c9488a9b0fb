/** The bridge's Prometheus metrics, on the process registry (served at `/metrics`). */
import { Counter, Gauge, Histogram } from 'prom-client';
import { registry } from '../observability/metrics.js';
import { WatchedPacers } from '../pacing/watched-pacers.js';

/** The senders of this process's signallers (one leads at a time), shown in the pacing gauges (`watch`). */
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
  signallerActive: new Gauge({
    name: 'push_bridge_signaller_active',
    help: "1 on the bridge replica whose signaller holds the lock and sends the owed signals (server channels' and registrations'); the deployment should show exactly one",
    registers: [registry],
  }),
  owedSignals: new Gauge({
    name: 'push_bridge_owed_signals',
    help: 'Registrations owed a signal that the signaller has taken from the outbox and not yet sent (at most its load, 20,000)',
    registers: [registry],
  }),
  owedSignalsOldest: new Gauge({
    name: 'push_bridge_owed_signals_oldest_seconds',
    help: 'Age of the oldest outbox row the signaller is sending: how long the signals that can wait are waiting',
    registers: [registry],
  }),
  owedSignalsSeconds: new Histogram({
    name: 'push_bridge_owed_signals_seconds',
    help: 'Time from an outbox row being recorded (a server channel message, a registration) to its last signal accepted',
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600],
    registers: [registry],
  }),
  pacedSignals: new Gauge({
    name: 'push_bridge_paced_signals',
    help: "Signals waiting in the signaller's pacer for the workers' backlog to shrink",
    registers: [registry],
    collect() {
      this.set(bridgePacers.sum((v) => v.queued));
    },
  }),
  pacingWindow: new Gauge({
    name: 'push_bridge_pacing_window',
    help: 'Signals the pacer lets be sent and not yet done by a worker (0 when pacing is off)',
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
  pacingBlind: new Gauge({
    name: 'push_bridge_pacing_blind',
    help: "1 while the pacer's describes of signalled workflows fail or time out: it cannot see the backlog, and signals go out without pacing",
    registers: [registry],
    collect() {
      this.set(bridgePacers.views().some((v) => v.blind) ? 1 : 0);
    },
  }),
  taskQueuePartitions: new Gauge({
    name: 'push_bridge_task_queue_partitions',
    help: "Partitions of the task queue's workflow tasks, as Temporal reports them (ListTaskQueuePartitions, every 10 min); above 1 the queue is served out of order and a DM can wait behind more than the pacing's target",
    registers: [registry],
  }),
  pacingDescribeFailures: new Counter({
    name: 'push_bridge_pacing_describe_failures_total',
    help: "The pacer's DescribeWorkflowExecution calls that failed or did not answer in time (each counts as done: pacing is off meanwhile)",
    registers: [registry],
  }),
  pacingMarkersGivenUp: new Counter({
    name: 'push_bridge_pacing_markers_given_up_total',
    help: "Markers the pacer gave up: reason wedged (the workflow's task is retried after failures, or on another task queue) or timed out (still waiting at the bound)",
    labelNames: ['reason'] as const,
    registers: [registry],
  }),
};

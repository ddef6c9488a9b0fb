/**
 * What the bridge does with one JetStream message: validate, record, signal, then settle it
 * with JetStream —
 *
 * - malformed (docs/design.md, Message events) → `term`: counted, logged with ids only, never redelivered;
 * - channel unknown → `ack`: nobody to wake;
 * - a server channel's, recorded with its signals owed in the outbox (the head's and the tail's
 *   transactions, record-events.ts) → `ack`:
 *   the signaller sends them, paced, without holding the event's slot meanwhile;
 * - a DM's, recorded and every signal accepted (at once, never paced) → `ack`;
 * - anything failed → `nak` with a delay growing with the delivery count. The transaction
 *   either committed (the retry finds the event in the ledger and only re-signals) or rolled
 *   back (the retry counts it): either way the retry is exact.
 *
 * Valid events go through a per-channel batcher: the events of one channel in flight at once
 * are recorded in one transaction (see keyed-batcher.ts and record-events.ts).
 */
import type { JsMsg } from '@nats-io/jetstream';
import type { DatabasePool } from 'slonik';
import type { Logger } from '../observability/log.js';
import { signalRegistrations, type SignalTarget } from './signal-pending.js';
import { parseMessageEvent, type MessageEvent } from './event.js';
import { createKeyedBatcher } from './keyed-batcher.js';
import { bridgeMetrics, type EventOutcome } from './metrics.js';
import { recordChannelEvents, type EventRecord } from './record-events.js';
import { errorSummary } from '../observability/error-summary.js';
import { rememberEventContext, traceEvent, traceRecording, traceSignals } from './tracing.js';

export interface RetryPolicy {
  /** Delay before the first redelivery of a failed event; doubles with each further one. */
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
}

export interface EventHandlerDeps {
  readonly pool: DatabasePool;
  readonly signals: SignalTarget;
  readonly log: Logger;
  readonly subjectPrefix: string;
  readonly retry: RetryPolicy;
  /** The consumer's ack wait: a long event tells JetStream it is still working well before it. */
  readonly ackWaitMs: number;
  /** Most events of one channel recorded in one transaction. */
  readonly maxBatch: number;
  /** Told when signals were just owed in the outbox (the signaller looks at once): after a head, and after its tail. */
  readonly owed: () => void;
}

/** The delay before redelivering an event that failed on its `deliveryCount`-th delivery. */
export function retryDelayMs(deliveryCount: number, policy: RetryPolicy): number {
  const doublings = Math.min(Math.max(deliveryCount - 1, 0), 30);
  return Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** doublings);
}

export function createEventHandler(deps: EventHandlerDeps): (msg: JsMsg) => Promise<void> {
  const batcher = createKeyedBatcher<MessageEvent, EventRecord>((channelId, events) => recordAndSignal(deps, channelId, events), deps.maxBatch);
  const record = (event: MessageEvent) => batcher.submit(event.channelId, event);
  return async (msg) => {
    const stopTimer = bridgeMetrics.duration.startTimer();
    bridgeMetrics.inFlight.inc();
    const heartbeat = setInterval(() => msg.working(), Math.max(1_000, Math.floor(deps.ackWaitMs / 3)));
    try {
      const outcome = await traceEvent(msg, () => settle(deps, record, msg));
      bridgeMetrics.events.inc({ outcome });
    } finally {
      clearInterval(heartbeat);
      bridgeMetrics.inFlight.dec();
      stopTimer();
    }
  };
}

async function settle(deps: EventHandlerDeps, record: (event: MessageEvent) => Promise<EventRecord>, msg: JsMsg): Promise<EventOutcome> {
  const sequence = msg.info.streamSequence;
  const parsed = parseMessageEvent(msg.subject, msg.data, deps.subjectPrefix);
  if (!parsed.ok) {
    // The body is never logged: only where it came from and what was wrong with it.
    deps.log.warn({ subject: msg.subject.slice(0, 200), sequence, reason: parsed.reason }, 'malformed MESSAGE_CREATE event dropped');
    msg.term(`malformed: ${parsed.reason}`);
    return 'malformed';
  }
  const event = parsed.event;
  rememberEventContext(event);
  bridgeMetrics.lag.observe(Math.max(0, (Date.now() - event.createdAt.getTime()) / 1_000));
  try {
    const outcome = await record(event);
    msg.ack();
    return outcome;
  } catch (error) {
    const delayMs = retryDelayMs(msg.info.deliveryCount, deps.retry);
    deps.log.warn(
      {
        messageId: event.messageId,
        channelId: event.channelId,
        sequence,
        deliveries: msg.info.deliveryCount,
        retryInMs: delayMs,
        err: errorSummary(error),
      },
      'MESSAGE_CREATE event failed; will be redelivered',
    );
    msg.nak(delayMs);
    return 'failed';
  }
}

async function recordAndSignal(deps: EventHandlerDeps, channelId: string, events: readonly MessageEvent[]): Promise<readonly EventRecord[]> {
  bridgeMetrics.batchSize.observe(events.length);
  const recorded = await traceRecording(events, (traceparent) => recordChannelEvents(deps.pool, channelId, events, traceparent, deps.owed));
  bridgeMetrics.pendingRows.inc({ change: 'created' }, recorded.rowsCreated);
  bridgeMetrics.pendingRows.inc({ change: 'updated' }, recorded.rowsUpdated);
  const owed = recorded.serverId === null ? 0 : recorded.registrationsToSignal.length;
  // A DM's signals go out now, before the ack; a server channel's are owed (the outbox, committed
  // with the rows) and sent by the signaller, told as each of the head and the tail commits.
  const signalled =
    recorded.serverId === null
      ? await traceSignals(events, recorded.registrationsToSignal.length, () =>
          signalRegistrations(deps.pool, deps.signals, recorded.registrationsToSignal),
        )
      : 0;
  deps.log.debug(
    { channelId, messageIds: events.map((e) => e.messageId), records: recorded.records, signalled, owed },
    'MESSAGE_CREATE events recorded',
  );
  return recorded.records;
}

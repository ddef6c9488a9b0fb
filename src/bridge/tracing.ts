/**
 * The bridge's part of a message's trace (docs/operations.md, "Tracing one message"):
 *   - `push.bridge.event`: one span per JetStream message, continuing the W3C `traceparent`
 *     (and `tracestate`) the chat server put in the NATS headers, or starting a trace;
 *   - `push.record`: the transaction that records a channel's events, in the first event's trace
 *     and linked to the others' (one transaction may record several); its `traceparent` is what
 *     the rows it creates keep, for the worker and the api to continue;
 *   - `push.signal`: the signals that follow, active, so Temporal's client spans (a DM's
 *     signal-with-start) are its children. Paced signals go later, from the pacer: the span
 *     covers their wait, and they carry no trace of their own.
 * With tracing off these spans are no-ops and no row keeps a trace.
 */
import { context as otelContext, propagation, ROOT_CONTEXT, SpanKind, trace, type Context, type Link, type TextMapGetter } from '@opentelemetry/api';
import type { JsMsg } from '@nats-io/jetstream';
import type { MsgHdrs } from '@nats-io/transport-node';
import { inSpan, spanAttribute, traceparentOf } from '../tracing/spans.js';
import type { MessageEvent } from './event.js';
import type { EventOutcome } from './metrics.js';

/** NATS headers as OpenTelemetry reads a carrier; names are matched ignoring case, as HTTP's are. */
const natsHeaders: TextMapGetter<MsgHdrs | undefined> = {
  keys: (headers) => (headers === undefined ? [] : headers.keys()),
  get: (headers, key) => {
    if (headers === undefined || !headers.has(key, 'insensitive')) return undefined;
    const values = headers.values(key, 'insensitive');
    return values.length === 1 ? values[0] : values;
  },
};

/** The chat server's trace context from a message's headers (an empty one without). */
export function messageContext(msg: Pick<JsMsg, 'headers'>): Context {
  return propagation.extract(ROOT_CONTEXT, msg.headers, natsHeaders);
}

/** Settles one message in its `push.bridge.event` span. */
export function traceEvent(msg: JsMsg, settle: () => Promise<EventOutcome>): Promise<EventOutcome> {
  const attributes = { [spanAttribute.messagingSystem]: 'nats', [spanAttribute.messagingOperation]: 'process' };
  return inSpan('push.bridge.event', { parent: messageContext(msg), kind: SpanKind.CONSUMER, attributes }, async (span) => {
    const outcome = await settle();
    span.setAttribute(spanAttribute.outcome, outcome);
    return outcome;
  });
}

const eventContexts = new WeakMap<MessageEvent, Context>();

/** Remembers that `event` belongs to the trace active now (its event span), for `traceRecording`. */
export function rememberEventContext(event: MessageEvent): void {
  eventContexts.set(event, otelContext.active());
}

/** Records a channel's events in a `push.record` span; `record` gets the `traceparent` the new rows keep. */
export function traceRecording<T>(events: readonly MessageEvent[], record: (traceparent: string | undefined) => Promise<T>): Promise<T> {
  const [first, ...others] = events.map((event) => eventContexts.get(event) ?? ROOT_CONTEXT);
  const links = others.flatMap((c) => linkTo(c));
  return inSpan('push.record', { parent: first ?? ROOT_CONTEXT, links, attributes: { [spanAttribute.events]: events.length } }, (span) =>
    record(traceparentOf(span)),
  );
}

/** Runs the signals of recorded events in an active `push.signal` span, in the first event's trace. */
export function traceSignals<T>(events: readonly MessageEvent[], devices: number, signal: () => Promise<T>): Promise<T> {
  const parent = (events[0] === undefined ? undefined : eventContexts.get(events[0])) ?? ROOT_CONTEXT;
  return inSpan('push.signal', { parent, attributes: { [spanAttribute.devices]: devices } }, () => signal());
}

function linkTo(context: Context): Link[] {
  const spanContext = trace.getSpanContext(context);
  return spanContext === undefined ? [] : [{ context: spanContext }];
}

/**
 * What leaves the process in a span. The design's promise — no token, endpoint, key, user id,
 * device id or channel id reaches a third party — covers our own telemetry too, and Temporal's
 * interceptors name workflow ids (`push-device:<user>:<device>`), activity ids and run ids, and
 * copy the whole workflow info (search attributes with user and device ids) into workflow spans.
 * So every span is exported as a copy that keeps:
 *   - only the attributes named below (counts, enums, booleans our code sets);
 *   - no status message and, of an event (an exception), its name, time and exception type only:
 *     an error's message may quote an id;
 *   - links as bare span contexts.
 * Span names are ours (`push.*`) or Temporal's (`StartActivity:claimWake`: a type, never an id).
 */
import type { ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { Attributes } from '@opentelemetry/api';

/** The attributes of our spans (src/tracing/spans.ts): the only ones exported. */
export const spanAttribute = {
  /** `fcm` | `unifiedpush` */
  transport: 'push.transport',
  /** `high` | `normal` */
  priority: 'push.priority',
  /** How it ended: an event's outcome, a claim's, a send's (`delivered`, `deferred`…). */
  outcome: 'push.outcome',
  /** Why a wake did not go: a deferral's cause, a claim's held-back reason. */
  reason: 'push.reason',
  isDm: 'push.is_dm',
  /** How many: events in a transaction, devices signalled, rows drained. */
  events: 'push.events',
  devices: 'push.devices',
  rows: 'push.rows',
  messagingSystem: 'messaging.system',
  messagingOperation: 'messaging.operation.type',
} as const;

const exported = new Set<string>(Object.values(spanAttribute));
const exceptionType = 'exception.type';

export function redactingExporter(inner: SpanExporter): SpanExporter {
  return {
    export: (spans: ReadableSpan[], done: (result: ExportResult) => void) => inner.export(spans.map(redacted), done),
    shutdown: () => inner.shutdown(),
    forceFlush: () => inner.forceFlush?.() ?? Promise.resolve(),
  };
}

/** The span as it may leave the process (module comment). */
export function redacted(span: ReadableSpan): ReadableSpan {
  return {
    name: span.name,
    kind: span.kind,
    spanContext: () => span.spanContext(),
    parentSpanId: span.parentSpanId,
    startTime: span.startTime,
    endTime: span.endTime,
    status: { code: span.status.code },
    attributes: allowed(span.attributes, exported),
    links: span.links.map((link) => ({ context: link.context })),
    events: span.events.map((event) => ({
      name: event.name,
      time: event.time,
      attributes: allowed(event.attributes ?? {}, new Set([exceptionType])),
    })),
    duration: span.duration,
    ended: span.ended,
    resource: span.resource,
    instrumentationLibrary: span.instrumentationLibrary,
    droppedAttributesCount: 0,
    droppedEventsCount: span.droppedEventsCount,
    droppedLinksCount: span.droppedLinksCount,
  };
}

function allowed(attributes: Attributes, keys: ReadonlySet<string>): Attributes {
  const kept: Attributes = {};
  for (const [key, value] of Object.entries(attributes)) if (keys.has(key)) kept[key] = value;
  return kept;
}

/**
 * Our spans, for the bridge, the worker's activities and the api (docs/operations.md, "Tracing
 * one message"). With tracing off (no OTEL_EXPORTER_OTLP_ENDPOINT) the OpenTelemetry API is a
 * no-op: spans are not recording, `traceparentOf` gives nothing and nothing is stored.
 *
 * A message's trace outlives the bridge: its `push_pending` row keeps the W3C `traceparent` of
 * the span that recorded it (migration 000032), and the claim, the send and the drain that take
 * the row continue that trace from it, whichever process and however much later.
 */
import {
  context as otelContext,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes,
  type Context,
  type Link,
  type Span,
} from '@opentelemetry/api';

export { spanAttribute } from './redact.js';

export function tracer() {
  return trace.getTracer('zippchat-push');
}

const traceparentPattern = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The span's W3C `traceparent` when it is sampled (what a pending row keeps), else undefined. */
export function traceparentOf(span: Span): string | undefined {
  const { traceId, spanId, traceFlags } = span.spanContext();
  if (!span.isRecording() || (traceFlags & TraceFlags.SAMPLED) === 0) return undefined;
  return `00-${traceId}-${spanId}-${traceFlags.toString(16).padStart(2, '0')}`;
}

/** A context whose parent is the span a stored `traceparent` names; undefined for anything else. */
export function contextOfTraceparent(traceparent: string | null | undefined): Context | undefined {
  const match = traceparentPattern.exec(traceparent ?? '');
  if (match === null || /^0+$/.test(match[1]!) || /^0+$/.test(match[2]!)) return undefined;
  return trace.setSpanContext(ROOT_CONTEXT, { traceId: match[1]!, spanId: match[2]!, traceFlags: Number.parseInt(match[3]!, 16), isRemote: true });
}

export interface SpanOptions {
  readonly attributes?: Attributes;
  readonly kind?: SpanKind;
  /** The parent; the active context by default. */
  readonly parent?: Context;
  readonly links?: readonly Link[];
}

/**
 * Runs `work` in a new active span that ends when it settles. A failure sets the span's status
 * to ERROR with the error's class only (its message may quote an id or a secret).
 */
export async function inSpan<T>(name: string, options: SpanOptions, work: (span: Span) => Promise<T>): Promise<T> {
  const parent = options.parent ?? otelContext.active();
  const span = tracer().startSpan(
    name,
    {
      kind: options.kind ?? SpanKind.INTERNAL,
      ...(options.attributes === undefined ? {} : { attributes: options.attributes }),
      links: [...(options.links ?? [])],
    },
    parent,
  );
  try {
    return await otelContext.with(trace.setSpan(parent, span), () => work(span));
  } catch (error) {
    span.setStatus({ code: SpanStatusCode.ERROR });
    span.addEvent('exception', { 'exception.type': error instanceof Error ? error.name : typeof error });
    throw error;
  } finally {
    span.end();
  }
}

/** A span for work that began at `start` (epoch ms) and just ended, under `parent`. */
export function recordPastSpan(name: string, parent: Context, start: number, attributes: Attributes, links: readonly Link[] = []): void {
  tracer()
    .startSpan(name, { startTime: start, attributes, links: [...links] }, parent)
    .end();
}

/** A link to the span active now (e.g. Temporal's activity span), if any. */
export function linkToActive(): Link[] {
  const active = trace.getSpan(otelContext.active());
  return active === undefined || !active.isRecording() ? [] : [{ context: active.spanContext() }];
}

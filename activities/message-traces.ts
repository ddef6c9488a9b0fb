/**
 * A wake's spans in the trace of the message it is for (docs/operations.md, "Tracing one
 * message"). The bridge leaves the `traceparent` of the span that recorded a message on its
 * pending row (migration 000032); the claim and the send of the wake that row asks for become
 * spans of that trace — the DM's row first, else the oldest — linked to Temporal's own activity
 * span when the workflow is traced, and the provider's call a span within the send. Without
 * tracing (`messageTraces` absent) nothing is read and no span is made; a row without a
 * `traceparent` (an untraced message) gives no span either: no wake starts a trace of its own.
 * Spans carry enums and flags only (src/tracing/redact.ts).
 */
import type { Context } from '@opentelemetry/api';
import { SpanKind, trace } from '@opentelemetry/api';
import { sql } from 'slonik';
import { z } from 'zod';
import type { DatabasePool } from '../src/db/pool.js';
import type { DeliveryOutcome } from '../src/transports/types.js';
import { contextOfTraceparent, inSpan, linkToActive, recordPastSpan, spanAttribute } from '../src/tracing/spans.js';
import type { TransportName, WakePriority } from '../domain/vocabulary.js';

export interface MessageTraces {
  /** The trace context the registration's pending rows name (DM first, then oldest), if any. */
  of(registrationId: string): Promise<Context | undefined>;
}

export function pendingRowTraces(pool: DatabasePool): MessageTraces {
  return {
    async of(registrationId) {
      const traceparent = await pool.maybeOneFirst(sql.type(z.object({ trace_parent: z.string() }))`
        SELECT trace_parent FROM push_pending
        WHERE registration_id = ${registrationId} AND trace_parent IS NOT NULL
        ORDER BY is_dm DESC, first_at
        LIMIT 1`);
      return contextOfTraceparent(traceparent);
    },
  };
}

/** What a claim answered, as its span says it. */
export interface ClaimAnswer {
  readonly status: 'claimed' | 'not-claimed' | 'gone';
  readonly registrationId?: string;
  readonly priority?: WakePriority;
  readonly transport?: TransportName;
  readonly heldBack?: string;
}

/** A `push.claim` span for a claim that began at `startedAt`, in its message's trace. Never fails the claim. */
export async function traceClaim(traces: MessageTraces | undefined, answer: ClaimAnswer, startedAt: number): Promise<void> {
  if (traces === undefined || answer.registrationId === undefined) return;
  const parent = await traces.of(answer.registrationId).catch(() => undefined);
  if (parent === undefined) return;
  recordPastSpan(
    'push.claim',
    parent,
    startedAt,
    {
      [spanAttribute.outcome]: answer.status,
      ...(answer.priority === undefined ? {} : { [spanAttribute.priority]: answer.priority }),
      ...(answer.transport === undefined ? {} : { [spanAttribute.transport]: answer.transport }),
      ...(answer.heldBack === undefined ? {} : { [spanAttribute.reason]: answer.heldBack }),
    },
    linkToActive(),
  );
}

/** Runs a send in a `push.send` span of its message's trace (when there is one). */
export async function traceSend<T extends { readonly kind: string }>(
  traces: MessageTraces | undefined,
  registrationId: string,
  send: () => Promise<T>,
): Promise<T> {
  const parent = traces === undefined ? undefined : await traces.of(registrationId).catch(() => undefined);
  if (parent === undefined) return send();
  return inSpan('push.send', { parent, links: linkToActive() }, async (span) => {
    const result = await send();
    span.setAttribute(spanAttribute.outcome, result.kind);
    return result;
  });
}

/** The provider's call as a `push.provider` span within the send's, when the send is traced. */
export async function traceProviderCall(
  transport: TransportName,
  priority: WakePriority,
  call: () => Promise<DeliveryOutcome>,
): Promise<DeliveryOutcome> {
  if (trace.getActiveSpan()?.isRecording() !== true) return call();
  return inSpan(
    'push.provider',
    { kind: SpanKind.CLIENT, attributes: { [spanAttribute.transport]: transport, [spanAttribute.priority]: priority } },
    async (span) => {
      const outcome = await call();
      span.setAttribute(spanAttribute.outcome, outcome.kind);
      if (outcome.kind === 'deferred') span.setAttribute(spanAttribute.reason, outcome.cause);
      return outcome;
    },
  );
}

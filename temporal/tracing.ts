/**
 * Temporal's OpenTelemetry interceptors (@temporalio/interceptors-opentelemetry), wired so that
 * they trace only what is already traced: a client call made inside a recording span (a message
 * the bridge is signalling for) carries its context to the workflow in a header; a workflow,
 * signal or activity whose header carries one is traced (temporal/workflow-tracing.ts, and the
 * activity interceptor below); anything else runs as without them. So an untraced call never
 * starts a trace of its own, and a workflow that lives for months does not hold a span open.
 * The spans the workflows make leave through the `exporter` sink, which the worker always
 * registers (spans are dropped when tracing is off) so that a traced signal never meets a worker
 * that cannot take its spans. Every span is redacted before export (src/tracing/redact.ts).
 */
import path from 'node:path';
import { trace } from '@opentelemetry/api';
import type { WorkflowClientInterceptor } from '@temporalio/client';
import {
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryWorkflowClientInterceptor,
  makeWorkflowExporter,
} from '@temporalio/interceptors-opentelemetry';
import type { ActivityInboundCallsInterceptor, ActivityInterceptorsFactory, InjectedSinks } from '@temporalio/worker';
import type { Headers } from '@temporalio/common';
import type { OpenTelemetryWorkflowExporter } from '@temporalio/interceptors-opentelemetry/lib/workflow/definitions.js';
import { projectRoot } from '../src/process/paths.js';
import type { Tracing } from '../src/tracing/index.js';

/** The header Temporal's interceptors carry a trace context in. */
export const traceHeader = '_tracer-data';

/** The workflow interceptor module, bundled with the workflows (src/bin/bundle-workflows.ts, worker.ts). */
export const workflowTracingModulePath = path.join(projectRoot, 'temporal', 'workflow-tracing.ts');

/** Temporal's client interceptor, for calls made inside a recording span only. */
export function tracedClientInterceptor(): WorkflowClientInterceptor {
  const traced = new OpenTelemetryWorkflowClientInterceptor() as unknown as Record<string, Intercept>;
  return new Proxy({} as WorkflowClientInterceptor, {
    get: (_target, method: string) => {
      const intercept = traced[method];
      if (typeof intercept !== 'function') return undefined;
      return (input: unknown, next: (input: unknown) => Promise<unknown>) =>
        trace.getActiveSpan()?.isRecording() === true ? intercept.call(traced, input, next) : next(input);
    },
  });
}

type Intercept = (input: unknown, next: (input: unknown) => Promise<unknown>) => Promise<unknown>;

/** Temporal's activity interceptor, for activities whose workflow is traced (a header says so) only. */
export const tracedActivityInterceptors: ActivityInterceptorsFactory = (ctx) => {
  const traced = new OpenTelemetryActivityInboundInterceptor(ctx);
  const inbound: ActivityInboundCallsInterceptor = {
    execute: (input, next) => (isTraced(input.headers) ? traced.execute(input, next) : next(input)),
  };
  return { inbound };
};

function isTraced(headers: Headers): boolean {
  return Object.prototype.hasOwnProperty.call(headers, traceHeader);
}

/** The sink the workflows' spans leave by: into the process's span processor, or nowhere with tracing off. */
export function workflowSpanSinks(tracing: Tracing | undefined): InjectedSinks<{ exporter: OpenTelemetryWorkflowExporter }> {
  if (tracing === undefined) return { exporter: { export: { fn: () => undefined } } };
  return { exporter: makeWorkflowExporter(tracing.processor, tracing.resource) };
}

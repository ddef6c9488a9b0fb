/**
 * OpenTelemetry for one process: when `OTEL_EXPORTER_OTLP_ENDPOINT` is set (src/config,
 * sections/tracing.ts), a tracer provider with W3C trace-context propagation and an
 * AsyncLocalStorage context, sampling `parentbased_traceidratio`, and a batch processor that
 * exports every span over OTLP/HTTP (JSON, `<endpoint>/v1/traces`) after redacting it
 * (redact.ts). When it is unset, nothing is installed: the API's spans are no-ops and nothing
 * leaves the process. The exporter's own failures are logged, at most once a minute each.
 */
import { diag, DiagLogLevel } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import type { TracingSettings } from '../config/index.js';
import type { Logger } from '../observability/log.js';
import { serviceVersion } from '../process/version.js';
import { redactingExporter } from './redact.js';

export interface Tracing {
  /** Where every span of the process ends, the workflows' too (src/worker/temporal-worker.ts). */
  readonly processor: SpanProcessor;
  readonly resource: Resource;
  /** Exports what is buffered, then stops. */
  shutdown(): Promise<void>;
}

export function startTracing(settings: TracingSettings | undefined, service: string, log: Logger): Tracing | undefined {
  if (settings === undefined) return undefined;
  diag.setLogger(throttledDiag(log), DiagLogLevel.WARN);
  const exporter = new OTLPTraceExporter({ url: `${settings.endpoint}/v1/traces`, timeoutMillis: 10_000 });
  const processor = new BatchSpanProcessor(redactingExporter(exporter), { scheduledDelayMillis: 2_000, maxQueueSize: 10_000 });
  const resource = new Resource({ 'service.name': `zippchat-push-${service}`, 'service.version': serviceVersion });
  const provider = new BasicTracerProvider({
    resource,
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(settings.sampleRatio) }),
    spanProcessors: [processor],
  });
  provider.register({ contextManager: new AsyncLocalStorageContextManager().enable(), propagator: new W3CTraceContextPropagator() });
  log.info({ endpoint: settings.endpoint, sampleRatio: settings.sampleRatio }, 'tracing: exporting spans over OTLP');
  return { processor, resource, shutdown: () => provider.shutdown() };
}

/** OpenTelemetry's own warnings and errors (an export refused, a collector away) into the log, each at most once a minute. */
function throttledDiag(log: Logger) {
  const last = new Map<string, number>();
  const write = (level: 'warn' | 'error') => (message: string) => {
    const now = Date.now();
    if ((last.get(message) ?? -Infinity) > now - 60_000) return;
    last.set(message, now);
    log[level]({ component: 'tracing' }, `tracing: ${message.slice(0, 300)}`);
  };
  const nothing = () => undefined;
  return { error: write('error'), warn: write('warn'), info: nothing, debug: nothing, verbose: nothing };
}

/**
 * OpenTelemetry tracing (src/tracing/): spans are exported over OTLP/HTTP (JSON) to
 * `OTEL_EXPORTER_OTLP_ENDPOINT` (the collector's base URL; traces go to `<it>/v1/traces`, as
 * OpenTelemetry's variable means), and nothing is exported, nor recorded, while it is unset.
 * `OTEL_TRACES_SAMPLER_ARG` is the share of new traces kept (OpenTelemetry's
 * `parentbased_traceidratio`): a trace continued from the chat server's `traceparent` keeps
 * the chat server's decision.
 */
import { section } from '../section.js';
import { invalid, text } from '../vars.js';

export interface TracingSettings {
  /** Where traces go: `<endpoint>/v1/traces`. */
  readonly endpoint: string;
  /** The share of traces started here that are sampled, 0 to 1. */
  readonly sampleRatio: number;
}

const endpointVar = text().transform((value, ctx): string | undefined => {
  if (value === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return invalid(ctx, 'must be an http(s) URL, e.g. http://otel-collector:4318');
  }
  if (!['http:', 'https:'].includes(url.protocol) || url.search !== '' || url.hash !== '') {
    return invalid(ctx, 'must be an http(s) URL without query or fragment, e.g. http://otel-collector:4318');
  }
  return value.replace(/\/+$/, '');
});

const ratioVar = text().transform((value, ctx): number => {
  if (value === undefined) return 1;
  const ratio = Number(value.trim());
  return value.trim() !== '' && Number.isFinite(ratio) && ratio >= 0 && ratio <= 1
    ? ratio
    : invalid(ctx, `must be a number from 0 to 1 (got "${value}")`);
});

export const tracingSection = section(
  { OTEL_EXPORTER_OTLP_ENDPOINT: endpointVar, OTEL_TRACES_SAMPLER_ARG: ratioVar },
  (v): { tracing: TracingSettings | undefined } => ({
    tracing:
      v.OTEL_EXPORTER_OTLP_ENDPOINT === undefined ? undefined : { endpoint: v.OTEL_EXPORTER_OTLP_ENDPOINT, sampleRatio: v.OTEL_TRACES_SAMPLER_ARG },
  }),
);

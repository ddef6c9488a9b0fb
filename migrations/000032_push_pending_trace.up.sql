-- The W3C traceparent (55 characters) of the bridge's span that recorded a pending row, when the
-- bridge traces (OTEL_EXPORTER_OTLP_ENDPOINT): the claim, the send and the drain that take the
-- row continue that message's trace from it (docs/operations.md, "Tracing one message"). It is
-- the first message's: a message that only adds to the row leaves it. NULL when untraced,
-- which is every row written without tracing. It names a span, never a user, device or channel.
--
-- Adding a nullable column without a default rewrites nothing, at any table size.
ALTER TABLE push_pending ADD COLUMN trace_parent text NULL CHECK (length(trace_parent) = 55);

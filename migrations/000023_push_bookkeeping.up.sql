-- Bookkeeping this implementation needs beyond the columns of docs/design.md, Registrations
-- (000022 is exactly the design's schema).

-- "A push_pending row untouched for 7 days is dropped": when a row was last written.
-- Deliberately not indexed: every message rewrites its row, and an index on last_at would
-- turn those in-place (HOT) updates into index churn. Maintenance scans for it in batches.
ALTER TABLE push_pending ADD COLUMN last_at timestamptz NOT NULL DEFAULT now();

-- Pruning "not re-registered for 90 days" without a full scan.
CREATE INDEX push_registrations_updated_at_idx ON push_registrations (updated_at);

-- Message events already counted, so that a redelivered or republished MESSAGE_CREATE
-- counts once. Kept as long as the stream can redeliver, then pruned.
CREATE TABLE push_processed_events (
  message_id   bigint PRIMARY KEY,
  processed_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX push_processed_events_processed_at_idx ON push_processed_events (processed_at);

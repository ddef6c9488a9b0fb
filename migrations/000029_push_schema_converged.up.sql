-- Brings a database of either line of releases to the same schema (migrations/README.md):
--  - at 000027 (000026 and 000027 applied): nothing to do;
--  - at 000028 as released on 2026-12-04 (000026 and 000027 never applied, and never will be:
--    they are below its version): what they would have added.
-- Every statement is a no-op where its effect is already there.

-- 000026: why a back-off holds a device's wakes (last_wake_priority is 000028's, ensured there).
-- Adding a nullable column without a default rewrites nothing, at any table size.
ALTER TABLE push_registrations
  ADD COLUMN IF NOT EXISTS backoff_cause text NULL CHECK (backoff_cause IN ('rate_limited', 'outage', 'failing', 'misconfigured'));

-- 000027: the keyset index that pages the end of an outage, in place of the single-column one.
-- Partial: only rows held back by an outage are in it, so it is small to build at any size.
CREATE INDEX IF NOT EXISTS push_registrations_backoff_origin_id_idx ON push_registrations (backoff_origin, id) WHERE backoff_origin IS NOT NULL;
DROP INDEX IF EXISTS push_registrations_backoff_origin_idx;

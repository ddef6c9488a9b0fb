-- The end of an outage wakes every registration it held back, a page at a time, by keyset:
-- `WHERE backoff_origin = $origin AND id > $last ORDER BY id LIMIT 500`. An index on
-- (backoff_origin) alone made each page re-read every held row before it (quadratic in the
-- rows held); on (backoff_origin, id) each page starts where the last ended. It also serves
-- every lookup by origin alone, so it replaces the single-column index. Partial: only rows
-- held back by an outage are in it, so it stays small and costs nothing to build at any size.
CREATE INDEX push_registrations_backoff_origin_id_idx ON push_registrations (backoff_origin, id) WHERE backoff_origin IS NOT NULL;
DROP INDEX IF EXISTS push_registrations_backoff_origin_idx;

CREATE INDEX IF NOT EXISTS push_registrations_backoff_origin_idx ON push_registrations (backoff_origin) WHERE backoff_origin IS NOT NULL;
DROP INDEX IF EXISTS push_registrations_backoff_origin_id_idx;

DROP TABLE IF EXISTS push_processed_events;
DROP INDEX IF EXISTS push_registrations_updated_at_idx;
ALTER TABLE push_pending DROP COLUMN IF EXISTS last_at;

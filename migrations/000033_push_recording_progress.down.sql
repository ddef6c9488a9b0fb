ALTER TABLE push_processed_events DROP COLUMN IF EXISTS recorded_through;

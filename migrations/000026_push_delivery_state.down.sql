ALTER TABLE push_registrations DROP COLUMN backoff_cause, DROP COLUMN last_wake_priority;

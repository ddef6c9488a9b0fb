ALTER TABLE push_registrations DROP COLUMN last_wake_priority;

DROP INDEX IF EXISTS push_registrations_priority_lowered_idx;
DROP INDEX IF EXISTS push_registrations_repeatedly_undrained_idx;
ALTER TABLE push_registrations
  DROP COLUMN test_wake_requested_at,
  DROP COLUMN test_wake_pending,
  DROP COLUMN last_send_at,
  DROP COLUMN last_send_answer,
  DROP COLUMN priority_lowered_wakes,
  DROP COLUMN priority_lowered,
  DROP COLUMN repeatedly_undrained,
  DROP COLUMN wakes_since_drain,
  DROP COLUMN last_drained_at,
  DROP COLUMN last_delivered_at;
COMMENT ON COLUMN push_registrations.last_woken_at IS NULL;

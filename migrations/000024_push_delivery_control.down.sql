DROP TABLE IF EXISTS push_transport_health;
DROP INDEX IF EXISTS push_registrations_backoff_origin_idx;
ALTER TABLE push_registrations
  DROP COLUMN IF EXISTS backoff_origin,
  DROP COLUMN IF EXISTS backoff_reason,
  DROP COLUMN IF EXISTS backoff_count,
  DROP COLUMN IF EXISTS backoff_until,
  DROP COLUMN IF EXISTS fcm_budget_tat;

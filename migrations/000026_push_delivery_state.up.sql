-- The priority of the last wake claimed: with wake_outstanding, what the phone has been sent and
-- not drained. A DM that arrives while only a normal wake is outstanding may escalate it once
-- (one high wake, as soon as the minimum interval allows); a high wake outstanding is never
-- escalated. NULL for wakes claimed before this column existed: taken as high.
--
-- backoff_cause says why backoff_until holds the device's wakes back, in the words the device
-- is told (GET /api/push/registration): its distributor or FCM rate-limits it, the provider's
-- origin is in outage, its endpoint keeps failing, or our own configuration cannot send to its
-- transport. NULL with a back-off set before this column existed: reported as failing.
--
-- Adding nullable columns without a default rewrites nothing, at any table size.
ALTER TABLE push_registrations
  ADD COLUMN last_wake_priority text NULL CHECK (last_wake_priority IN ('normal', 'high')),
  ADD COLUMN backoff_cause text NULL CHECK (backoff_cause IN ('rate_limited', 'outage', 'failing', 'misconfigured'));

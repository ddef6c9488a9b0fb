-- The priority of the last wake claimed: with wake_outstanding, what the phone has been sent and
-- not drained. A DM that arrives while only a normal wake is outstanding may escalate it once
-- (one high wake, as soon as the minimum interval allows); a high wake outstanding is never
-- escalated. NULL for wakes claimed before this column existed: taken as high.
-- Adding a nullable column without a default rewrites nothing, at any table size.
ALTER TABLE push_registrations
  ADD COLUMN IF NOT EXISTS last_wake_priority text NULL CHECK (last_wake_priority IN ('normal', 'high'));

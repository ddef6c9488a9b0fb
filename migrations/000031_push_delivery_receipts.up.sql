-- What a device's delivery state needs beyond the claim's columns: when a wake last reached its
-- provider, when the device last drained, what the phone reported of the wakes it got, the
-- provider's last answer, and the test wake a device (or an operator) asked for.
--
-- last_woken_at (000022) stays the time of the last *claim*, on the workflow's clock: the
-- minimum interval, the re-wake and a retried claim's idempotency count from it, and a claim
-- whose wake is then held back or refused has set it all the same. last_delivered_at is when a
-- provider last accepted a wake: what GET /api/push/registration reports as `last_woken_at`.
COMMENT ON COLUMN push_registrations.last_woken_at IS
  'When the last wake was claimed (workflow time), whether or not it went out: the interval, the re-wake and a retried claim count from it. last_delivered_at is when a provider last accepted one.';

-- wakes_since_drain: wakes the provider accepted since the device last drained (a drain resets
-- it). repeatedly_undrained is wakes_since_drain >= 3, as a column of its own so that the
-- partial index behind the worker's gauge changes only when a device crosses that line: the
-- updates of every wake and every drain stay HOT.
--
-- priority_lowered: the phone last reported a HIGH wake delivered as NORMAL (FCM lowers the
-- priority of an app whose HIGH messages show no notification); priority_lowered_wakes counts
-- such reports.
--
-- last_send_answer, last_send_at: the provider's own answer to the last send (a fixed text:
-- transport, HTTP status, FCM error code; never a token or an endpoint), or why it was held back.
--
-- test_wake_pending: a test wake was asked for and has not been accepted by the provider yet;
-- the claim takes it as a pending DM. test_wake_requested_at: when, for the limit of one a minute.
--
-- New columns are nullable or have a constant default, and none has a CHECK: nothing is
-- rewritten or scanned at any table size (the two partial indexes read the table once, and
-- hold no row until a device qualifies).
ALTER TABLE push_registrations
  ADD COLUMN last_delivered_at timestamptz NULL,
  ADD COLUMN last_drained_at timestamptz NULL,
  ADD COLUMN wakes_since_drain integer NOT NULL DEFAULT 0,
  ADD COLUMN repeatedly_undrained boolean NOT NULL DEFAULT false,
  ADD COLUMN priority_lowered boolean NOT NULL DEFAULT false,
  ADD COLUMN priority_lowered_wakes integer NOT NULL DEFAULT 0,
  ADD COLUMN last_send_answer text NULL,
  ADD COLUMN last_send_at timestamptz NULL,
  ADD COLUMN test_wake_pending boolean NOT NULL DEFAULT false,
  ADD COLUMN test_wake_requested_at timestamptz NULL;

-- The worker's scrape-time gauges count these by transport from the indexes alone.
CREATE INDEX push_registrations_repeatedly_undrained_idx ON push_registrations (transport) WHERE repeatedly_undrained;
CREATE INDEX push_registrations_priority_lowered_idx ON push_registrations (transport) WHERE priority_lowered;

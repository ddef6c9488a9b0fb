-- What decides whether a wake may leave now, beyond the design's coalescing columns: the FCM
-- budget, back-offs and the outage window. All of it is read and written by the claim (one
-- conditional UPDATE) and by the send activity, under the registration's row lock.

-- FCM's collapsible-message throttle, mirrored per registration as a GCRA token bucket in one
-- column: the "theoretical arrival time" of the budget. NULL or in the past = the full burst is
-- available; every FCM wake moves it on by PUSH_FCM_WAKE_REFILL_MS (docs/transports.md).
ALTER TABLE push_registrations ADD COLUMN fcm_budget_tat timestamptz NULL;

-- A back-off in force: no wake before backoff_until (Retry-After, a growing back-off, or an
-- outage of the endpoint's origin). backoff_count: back-offs in a row (the growing back-off's
-- exponent), reset by a delivery. backoff_reason: a short fixed text for operators.
-- backoff_origin: set when the back-off is an origin's outage rather than the endpoint's own
-- answer, so that the end of the outage wakes these devices at once.
ALTER TABLE push_registrations
  ADD COLUMN backoff_until  timestamptz NULL,
  ADD COLUMN backoff_count  integer NOT NULL DEFAULT 0 CHECK (backoff_count >= 0),
  ADD COLUMN backoff_reason text NULL,
  ADD COLUMN backoff_origin text NULL;

-- The end of an outage finds its deferred devices without a scan (few rows: only those waiting).
CREATE INDEX push_registrations_backoff_origin_idx ON push_registrations (backoff_origin) WHERE backoff_origin IS NOT NULL;

-- The outage detector's window, shared by the worker replicas: each worker writes, every few
-- seconds, one row per origin it saw failing (and one for its deliveries), and reads the
-- others'. Rows older than a few minutes are deleted by the workers; the table stays small.
CREATE TABLE push_transport_health (
  origin_key        text NOT NULL,
  worker_id         text NOT NULL,
  -- Distinct registrations whose latest send to this origin, within the window, was delivered / failed.
  delivered         integer NOT NULL CHECK (delivered >= 0),
  failed            integer NOT NULL CHECK (failed >= 0),
  last_delivered_at timestamptz NULL,
  in_outage         boolean NOT NULL,
  updated_at        timestamptz NOT NULL,
  PRIMARY KEY (origin_key, worker_id)
);
CREATE INDEX push_transport_health_updated_at_idx ON push_transport_health (updated_at);

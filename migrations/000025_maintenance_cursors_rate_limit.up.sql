-- Where each maintenance scan stopped: a scan walks its table (or Temporal's list
-- of running workflows) in bounded windows and the next run goes on from here, so every rule
-- covers the whole table at any size. `position` is the last key handled (a registration id,
-- a push_pending key, a workflow start time); '' means the pass starts from the beginning.
CREATE TABLE push_maintenance_cursors (
  scan            text PRIMARY KEY,
  position        text NOT NULL,
  -- When the pass now under way started, and when the last one was completed.
  pass_started_at timestamptz NOT NULL DEFAULT now(),
  last_pass_at    timestamptz NULL,
  updated_at      timestamptz NOT NULL DEFAULT now()
);

-- The api's per-user limit (50 requests/s), shared by every api replica: per
-- user and one-second window, what all replicas have taken (requests admitted, leases
-- granted). Counters for the current second: unlogged (no WAL; a crash resets them, which
-- is harmless), pruned by the api itself a few windows later.
CREATE UNLOGGED TABLE push_rate_limit (
  window_start bigint NOT NULL,   -- seconds since the epoch
  user_id      text NOT NULL,
  taken        integer NOT NULL,
  granted      integer NOT NULL,  -- the lease granted by the last exchange
  PRIMARY KEY (window_start, user_id)
);

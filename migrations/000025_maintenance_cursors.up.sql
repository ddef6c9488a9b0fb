-- Where each maintenance scan stopped (issue 13): a scan walks its table (or Temporal's list
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

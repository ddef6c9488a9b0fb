-- Signals owed to registration workflows, recorded in the same transaction as what they tell
-- (the bridge's pending rows of a server channel, the api's registration), so that the event or
-- the request can be answered before the signals go out and nothing is lost if a process dies:
-- the bridge's signaller (one at a time, under an advisory lock) sends them, paced against the
-- workers' backlog, and deletes a row once every signal of it was accepted.
--
-- One row per recorded batch: a channel message that created pending rows for 10,000 devices is
-- one row of 10,000 registration ids (kept out of line by TOAST; advancing `sent` does not
-- rewrite them). A registration deleted meanwhile is skipped when the row is sent.
CREATE TABLE push_signal_outbox (
  id               bigserial PRIMARY KEY,
  -- the signal: `pending` (new pending rows) or `registered` (a PUT)
  signal           text NOT NULL CHECK (signal IN ('pending', 'registered')),
  -- whose turn it is in the signaller's fair queue: `server:<id>` or `user:<id>`
  turn_key         text NOT NULL,
  registration_ids bigint[] NOT NULL CHECK (cardinality(registration_ids) > 0),
  -- how many of `registration_ids`, from the first, have had their signal accepted
  sent             integer NOT NULL DEFAULT 0 CHECK (sent >= 0),
  -- the signaller term that took the row; NULL: not taken yet (or released by a new term)
  claimed_by       text NULL,
  created_at       timestamptz NOT NULL DEFAULT now()
);

-- What the signaller looks for every poll: rows nobody took yet, oldest first.
CREATE INDEX push_signal_outbox_unclaimed_idx ON push_signal_outbox (id) WHERE claimed_by IS NULL;

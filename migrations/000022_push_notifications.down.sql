DROP TABLE IF EXISTS push_pending;
DROP TABLE IF EXISTS push_registrations;

-- Restore the legacy table of 000010 as it was.
CREATE TABLE device_tokens (
  id bigserial PRIMARY KEY,
  user_id bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  token text NOT NULL UNIQUE,
  platform text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

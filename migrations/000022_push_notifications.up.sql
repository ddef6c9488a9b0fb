-- Push notifications (docs/design.md, Registrations): one registration per (user, device), and the per-channel
-- queue a woken device drains. Replaces the never-reachable device_tokens of 000010.

CREATE TABLE push_registrations (
  id               bigserial PRIMARY KEY,
  user_id          bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  device_id        text NOT NULL,
  transport        text NOT NULL CHECK (transport IN ('fcm', 'unifiedpush')),
  -- FCM registration token, or the UnifiedPush endpoint URL.
  token            text NOT NULL,
  -- RFC 8291 receiver public key (65-byte uncompressed P-256 point) and auth secret (16 bytes).
  up_p256dh        bytea NULL CHECK (up_p256dh IS NULL OR length(up_p256dh) = 65),
  up_auth          bytea NULL CHECK (up_auth IS NULL OR length(up_auth) = 16),
  -- Coalescing state (docs/design.md, Wakes).
  wake_outstanding boolean NOT NULL DEFAULT false,
  last_woken_at    timestamptz NULL,
  -- Consecutive transient send failures; ten prune the registration.
  failures         integer NOT NULL DEFAULT 0 CHECK (failures >= 0),
  created_at       timestamptz NOT NULL DEFAULT now(),
  -- Bumped every time the app re-registers (on every start).
  updated_at       timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT push_registrations_user_device_key UNIQUE (user_id, device_id),
  CONSTRAINT push_registrations_keys_together CHECK ((up_p256dh IS NULL) = (up_auth IS NULL)),
  CONSTRAINT push_registrations_keys_unifiedpush_only CHECK (transport = 'unifiedpush' OR up_p256dh IS NULL)
);

-- One row per (registration, channel), not per message: a busy channel costs one row per device.
CREATE TABLE push_pending (
  registration_id  bigint NOT NULL REFERENCES push_registrations (id) ON DELETE CASCADE,
  channel_id       bigint NOT NULL,
  message_count    integer NOT NULL CHECK (message_count > 0),
  first_message_id bigint NOT NULL,
  first_at         timestamptz NOT NULL,
  last_message_id  bigint NOT NULL,
  -- DM / group DM: drives wake priority.
  is_dm            boolean NOT NULL,
  PRIMARY KEY (registration_id, channel_id)
);

DROP TABLE IF EXISTS device_tokens;

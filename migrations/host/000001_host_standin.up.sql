-- Host stand-in (docs/design.md, Host tables): the chat server's tables this service reads, as the dev stack
-- and the tests need them. Never applied in production, where the host owns these tables.
-- Numbered below 000022 so that 000022 finds device_tokens (the host's migration 000010) to drop.

CREATE TABLE users (
  id bigint PRIMARY KEY,
  username text NOT NULL UNIQUE
);

CREATE TABLE servers (
  id bigint PRIMARY KEY,
  owner_id bigint NOT NULL REFERENCES users (id),
  name text
);

CREATE TABLE server_members (
  server_id bigint NOT NULL REFERENCES servers (id) ON DELETE CASCADE,
  user_id bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  PRIMARY KEY (server_id, user_id)
);
CREATE INDEX server_members_user_id_idx ON server_members (user_id);

-- The @everyone role of a server has id = server_id.
CREATE TABLE roles (
  id bigint PRIMARY KEY,
  server_id bigint NOT NULL REFERENCES servers (id) ON DELETE CASCADE,
  permissions bigint NOT NULL,
  position int NOT NULL DEFAULT 0
);
CREATE INDEX roles_server_id_idx ON roles (server_id);

CREATE TABLE member_roles (
  server_id bigint NOT NULL,
  user_id bigint NOT NULL,
  role_id bigint NOT NULL REFERENCES roles (id) ON DELETE CASCADE,
  PRIMARY KEY (server_id, user_id, role_id),
  FOREIGN KEY (server_id, user_id) REFERENCES server_members (server_id, user_id) ON DELETE CASCADE
);

CREATE TABLE channels (
  id bigint PRIMARY KEY,
  server_id bigint NULL REFERENCES servers (id) ON DELETE CASCADE,
  type text NOT NULL CHECK (type IN ('text', 'voice', 'dm', 'group_dm'))
);

-- DM / group DM membership.
CREATE TABLE channel_members (
  channel_id bigint NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
  user_id bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  PRIMARY KEY (channel_id, user_id)
);

CREATE TABLE permission_overwrites (
  channel_id bigint NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
  target_type text NOT NULL CHECK (target_type IN ('role', 'member')),
  target_id bigint NOT NULL,
  allow bigint NOT NULL DEFAULT 0,
  deny bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (channel_id, target_type, target_id)
);

-- A live mute: muted AND (mute_until IS NULL OR mute_until > now()).
CREATE TABLE notification_settings (
  user_id bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  scope_type text NOT NULL CHECK (scope_type IN ('server', 'channel')),
  scope_id bigint NOT NULL,
  muted boolean NOT NULL,
  mute_until timestamptz NULL,
  PRIMARY KEY (user_id, scope_type, scope_id)
);

-- A live session: revoked_at IS NULL AND expires_at > now().
CREATE TABLE refresh_tokens (
  id bigserial PRIMARY KEY,
  user_id bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  device_id text NOT NULL,
  expires_at timestamptz NOT NULL,
  revoked_at timestamptz NULL
);
CREATE INDEX refresh_tokens_user_device_idx ON refresh_tokens (user_id, device_id);

CREATE TABLE device_keys (
  user_id bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  device_id text NOT NULL,
  identity_key bytea,
  PRIMARY KEY (user_id, device_id)
);

-- The legacy table of the host's migration 000010 (written by an endpoint nginx never
-- routed); 000022 drops it. Its shape here matches 000022's down migration.
CREATE TABLE device_tokens (
  id bigserial PRIMARY KEY,
  user_id bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  token text NOT NULL UNIQUE,
  platform text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

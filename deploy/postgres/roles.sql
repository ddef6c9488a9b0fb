-- zippchat-push in the instance's PostgreSQL, least privilege: one login role per process and
-- one that owns this service's tables and runs its migrations. Run once as a superuser (or
-- the owner of the host's tables), after creating the roles with passwords of your own:
--
--   CREATE ROLE zippchat_push_migrate LOGIN PASSWORD '…';
--   CREATE ROLE zippchat_push_api     LOGIN PASSWORD '…';
--   CREATE ROLE zippchat_push_worker  LOGIN PASSWORD '…';
--   CREATE ROLE zippchat_push_bridge  LOGIN PASSWORD '…';
--
-- Then `migrate up` as zippchat_push_migrate (the chart's migrate Job), then grants.sql.
-- docs/deployment.md explains each line; test/deploy applies these files as they
-- are and runs the built processes with these roles.

-- Every role finds the tables; only the migrating role creates any.
GRANT USAGE ON SCHEMA public TO zippchat_push_migrate, zippchat_push_api, zippchat_push_worker, zippchat_push_bridge;
GRANT CREATE ON SCHEMA public TO zippchat_push_migrate;

-- 000022: push_registrations.user_id REFERENCES users (id); and it drops the host's legacy
-- device_tokens (migration 000010), which only the table's owner may do.
GRANT REFERENCES (id) ON users TO zippchat_push_migrate;
ALTER TABLE IF EXISTS device_tokens OWNER TO zippchat_push_migrate;

-- golang-migrate's bookkeeping, shared with the host's own migrations (000022 follows them):
-- one row, the current version, replaced as each migration commits.
DO $$
BEGIN
  IF to_regclass('schema_migrations') IS NOT NULL THEN
    GRANT SELECT, INSERT, DELETE ON schema_migrations TO zippchat_push_migrate;
  END IF;
END
$$;

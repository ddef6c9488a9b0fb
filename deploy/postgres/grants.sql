-- What each process may do, table by table, read from every statement the processes run
-- (src/api, src/bridge, activities, src/operations). Run after `migrate up` (and again after
-- an upgrade whose release notes say so: CHANGELOG.md, "Upgrading"), as a superuser or as both
-- zippchat_push_migrate (this service's tables) and the host tables' owner. Idempotent.
--
-- Row-locking reads (SELECT … FOR UPDATE) need UPDATE on the locked table; RETURNING, WHERE and
-- ON CONFLICT need SELECT; deleting a registration cascades to its pending rows as the tables'
-- owner, so no process needs DELETE on push_pending for that.

-- api: device registration (PUT/GET/DELETE), drain, device revocation.
GRANT SELECT, INSERT, UPDATE, DELETE ON push_registrations TO zippchat_push_api;
GRANT USAGE ON SEQUENCE push_registrations_id_seq TO zippchat_push_api;
GRANT SELECT, DELETE ON push_pending TO zippchat_push_api;
-- the registering user must exist; a drain re-checks who may see each channel
GRANT SELECT ON users, servers, server_members, roles, member_roles, channels, channel_members, permission_overwrites TO zippchat_push_api;
-- PUT registers only a device with a live session; DELETE /api/keys/devices/{id}: the
-- device's key bundle and sessions go with its registration
GRANT SELECT, DELETE ON device_keys, refresh_tokens TO zippchat_push_api;
-- the per-user rate limit, shared by the api replicas (000025)
GRANT SELECT, INSERT, UPDATE, DELETE ON push_rate_limit TO zippchat_push_api;
-- a PUT owes its workflow's start in the signal outbox (000030); the bridge's signaller sends it
GRANT INSERT ON push_signal_outbox TO zippchat_push_api;
GRANT USAGE ON SEQUENCE push_signal_outbox_id_seq TO zippchat_push_api;

-- worker: claims and sends (activities/registration.ts), maintenance (activities/maintenance.ts),
-- the scrape-time gauges, and push-admin run in its pod.
GRANT SELECT, UPDATE, DELETE ON push_registrations TO zippchat_push_worker;
GRANT SELECT, UPDATE, DELETE ON push_pending TO zippchat_push_worker;
GRANT SELECT, UPDATE, DELETE ON push_processed_events TO zippchat_push_worker;
-- "no live session" pruning
GRANT SELECT ON refresh_tokens TO zippchat_push_worker;
-- the outage detector's window, shared by the worker replicas (000024)
GRANT SELECT, INSERT, UPDATE, DELETE ON push_transport_health TO zippchat_push_worker;
-- where each maintenance scan stopped (000025)
GRANT SELECT, INSERT, UPDATE ON push_maintenance_cursors TO zippchat_push_worker;

-- bridge: recipients of a message, the counted-event ledger, pending rows.
GRANT SELECT ON push_registrations TO zippchat_push_bridge;
-- the upsert locks the recipients' registrations FOR KEY SHARE (a registration deleted
-- meanwhile is skipped); a row lock needs UPDATE on some column, and the bridge writes none
GRANT UPDATE (updated_at) ON push_registrations TO zippchat_push_bridge;
GRANT SELECT, INSERT, UPDATE ON push_pending TO zippchat_push_bridge;
GRANT SELECT, INSERT ON push_processed_events TO zippchat_push_bridge;
-- a large channel's message between its head and its tail (000033): marked, locked, cleared
GRANT UPDATE (recorded_through) ON push_processed_events TO zippchat_push_bridge;
GRANT SELECT ON channels, channel_members, servers, server_members, roles, member_roles, permission_overwrites, notification_settings TO zippchat_push_bridge;
-- the signal outbox (000030): a server channel's signals owed with its pending rows; the
-- signaller takes rows, advances and deletes them (its lock is an advisory lock: no grant)
GRANT SELECT, INSERT, UPDATE, DELETE ON push_signal_outbox TO zippchat_push_bridge;
GRANT USAGE ON SEQUENCE push_signal_outbox_id_seq TO zippchat_push_bridge;

DROP TABLE IF EXISTS push_maintenance_cursors;
DROP TABLE IF EXISTS push_rate_limit;

DROP TABLE IF EXISTS push_maintenance_cursors;

ALTER TABLE push_pending DROP COLUMN IF EXISTS trace_parent;

DROP TABLE IF EXISTS push_signal_outbox;

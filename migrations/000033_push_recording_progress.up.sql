-- A message to a large server channel is recorded in two transactions (src/bridge/record-events.ts):
-- the head writes the rows of its first recipients by registration id and owes their signals, so
-- the first wakes go out while the tail writes the rest. Between the two, the ledger row says how
-- far the message got: the greatest registration id whose row is written. NULL: every recipient's
-- row is written (or the message never needed a tail). A redelivery of a message left between head
-- and tail (its bridge died) finds it here and writes the rest, from that id on, exactly once.
--
-- Adding a nullable column without a default rewrites nothing, at any table size.
ALTER TABLE push_processed_events ADD COLUMN IF NOT EXISTS recorded_through bigint NULL;

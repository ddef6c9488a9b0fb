/**
 * How long rows are kept (docs/design.md, Pruning; docs/bridge.md): maintenance deletes what is
 * older, and the bridge checks at start that its stream never redelivers an event whose id the
 * exactly-once ledger has already forgotten.
 */

/** How long counted-event ids are kept: the stream's max age (3 days) plus a day of margin. */
export const processedEventRetentionMs = 4 * 24 * 3_600_000;
/** A registration not registered again for this long is pruned. */
export const staleRegistrationAfterDays = 90;
/** A pending row nobody touched for this long is dropped. */
export const untouchedPendingAfterDays = 7;

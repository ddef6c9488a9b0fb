/**
 * How long a wake that did not go through holds its device back, and when failures prune it
 * (docs/design.md, Pruning; docs/transports.md): the send activity applies these, the worker
 * ends the back-offs of an origin whose outage or misconfiguration is over, and the docs hold
 * their numbers to these (test/unit/docs/documented-thresholds.test.ts).
 */
import type { DeferralHold, TransportName } from './vocabulary.js';

/** Consecutive counted failures after which a registration is pruned (docs/design.md, Pruning). */
export const maxConsecutiveFailures = 10;

/**
 * Back-off bases: the n-th back-off in a row waits base × 2ⁿ, capped at the re-wake interval
 * (a Retry-After asks for at least its own delay, and a rate limit's is honoured exactly).
 */
export const backoffBaseMs: Readonly<Record<DeferralHold, number>> = { failing: 10_000, rate_limited: 60_000, outage: 30_000 };

/**
 * A `misconfigured` wake (our configuration cannot send to the transport) releases the claim with a
 * back-off that starts here and doubles up to `misconfiguredMaxMs`: a device waiting for the
 * operator costs a bounded number of history events a day (and its run continues as new after
 * enough claims), never a retry loop that grows one run without end. A worker that starts with
 * the transport configured ends these back-offs at once (src/worker/outage-coordinator.ts).
 */
export const misconfiguredRetryMs = 5 * 60_000;
export const misconfiguredMaxMs = 60 * 60_000;

/** The `backoff_origin` of wakes held back by our configuration of `transport`. */
export function misconfiguredOrigin(transport: TransportName): string {
  return `misconfigured ${transport}`;
}

/**
 * How a process of the benchmark (the benchmark itself, its helper workers) reaches the
 * stack's Temporal: from the same TEMPORAL_* variables the product's processes get, read by
 * the configuration's own Temporal section — so the dev server (plain TCP) and the real server
 * (mTLS with the stack's certificates) need nothing else.
 */
import { temporalConnectionOptions, type TemporalConnectionOptions, temporalSection } from '../src/testing.js';

export function benchTemporalConnection(temporalEnv: Readonly<Record<string, string>>): TemporalConnectionOptions {
  return temporalConnectionOptions(temporalSection.read(temporalEnv).temporal);
}

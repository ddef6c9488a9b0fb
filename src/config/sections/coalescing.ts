/** The design's §4 intervals (worker; maintenance's healing reads the re-wake too). */
import { ConfigError } from '../errors.js';
import { section } from '../section.js';
import { integer } from '../vars.js';

export interface Coalescing {
  readonly minIntervalMs: number;
  readonly rewakeAfterMs: number;
}

export const coalescingSection = section(
  { PUSH_MIN_INTERVAL_MS: integer(15_000, 1, 86_400_000), PUSH_REWAKE_AFTER_MS: integer(900_000, 1, 7 * 86_400_000) },
  (v): { coalescing: Coalescing } => {
    if (v.PUSH_REWAKE_AFTER_MS < v.PUSH_MIN_INTERVAL_MS) throw new ConfigError('PUSH_REWAKE_AFTER_MS', 'must not be shorter than PUSH_MIN_INTERVAL_MS');
    return { coalescing: { minIntervalMs: v.PUSH_MIN_INTERVAL_MS, rewakeAfterMs: v.PUSH_REWAKE_AFTER_MS } };
  },
);

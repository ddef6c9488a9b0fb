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
    if (v.PUSH_REWAKE_AFTER_MS < v.PUSH_MIN_INTERVAL_MS)
      throw new ConfigError('PUSH_REWAKE_AFTER_MS', 'must not be shorter than PUSH_MIN_INTERVAL_MS');
    return { coalescing: { minIntervalMs: v.PUSH_MIN_INTERVAL_MS, rewakeAfterMs: v.PUSH_REWAKE_AFTER_MS } };
  },
);

/**
 * The per-registration FCM wake budget (docs/transports.md): a burst of `burst` wakes, one
 * more every `refillMs`; a wake with no DM pending leaves `dmReserve` of it. `burst` 0: off.
 */
export interface FcmBudgetConfig {
  readonly burst: number;
  readonly refillMs: number;
  readonly dmReserve: number;
}

export const fcmBudgetSection = section(
  {
    PUSH_FCM_WAKE_BURST: integer(20, 0, 10_000),
    PUSH_FCM_WAKE_REFILL_MS: integer(180_000, 1, 86_400_000),
    PUSH_FCM_DM_RESERVE: integer(5, 0, 10_000),
  },
  (v): { fcmBudget: FcmBudgetConfig } => {
    const burst = v.PUSH_FCM_WAKE_BURST;
    // A reserve as large as the burst would never let a server-channel wake through FCM.
    if (burst > 0 && v.PUSH_FCM_DM_RESERVE >= burst)
      throw new ConfigError('PUSH_FCM_DM_RESERVE', `must be smaller than PUSH_FCM_WAKE_BURST (${burst})`);
    return { fcmBudget: { burst, refillMs: v.PUSH_FCM_WAKE_REFILL_MS, dmReserve: v.PUSH_FCM_DM_RESERVE } };
  },
);

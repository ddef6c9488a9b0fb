/**
 * The wake policy's settings (domain/wake-policy.ts owns the rule): the coalescing
 * intervals and the per-device FCM wake budget (docs/transports.md). The worker enforces them;
 * push-admin reads them to show a device's budget and why its wakes wait.
 */
import type { WakePolicy } from '../../../domain/wake-policy.js';
import { ConfigError } from '../errors.js';
import { section } from '../section.js';
import { integer } from '../vars.js';

export const wakePolicySection = section(
  {
    PUSH_MIN_INTERVAL_MS: integer(15_000, 1, 86_400_000),
    PUSH_REWAKE_AFTER_MS: integer(900_000, 1, 7 * 86_400_000),
    PUSH_FCM_WAKE_BURST: integer(20, 0, 10_000),
    PUSH_FCM_WAKE_REFILL_MS: integer(180_000, 1, 86_400_000),
    PUSH_FCM_DM_RESERVE: integer(5, 0, 10_000),
  },
  (v): { wakePolicy: WakePolicy } => {
    if (v.PUSH_REWAKE_AFTER_MS < v.PUSH_MIN_INTERVAL_MS)
      throw new ConfigError('PUSH_REWAKE_AFTER_MS', 'must not be shorter than PUSH_MIN_INTERVAL_MS');
    const burst = v.PUSH_FCM_WAKE_BURST;
    // A reserve as large as the burst would never let a server-channel wake through FCM.
    if (burst > 0 && v.PUSH_FCM_DM_RESERVE >= burst)
      throw new ConfigError('PUSH_FCM_DM_RESERVE', `must be smaller than PUSH_FCM_WAKE_BURST (${burst})`);
    return {
      wakePolicy: {
        minIntervalMs: v.PUSH_MIN_INTERVAL_MS,
        rewakeAfterMs: v.PUSH_REWAKE_AFTER_MS,
        fcmBudget: { burst, refillMs: v.PUSH_FCM_WAKE_REFILL_MS, dmReserve: v.PUSH_FCM_DM_RESERVE },
      },
    };
  },
);

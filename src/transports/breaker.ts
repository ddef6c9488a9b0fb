/**
 * The prune breaker. FCM answers 400 INVALID_ARGUMENT (about the token) or 403
 * SENDER_ID_MISMATCH for a dead token — but a payload bug, a wrong project or a rotated
 * service account can make it answer the same for *every* device, and obeying would delete
 * every FCM registration of the instance. So: while more than `threshold` distinct
 * registrations got such an answer within the last `windowMs`, the breaker is open and those
 * answers no longer prune (the caller reports them as config errors). It closes again once
 * the window holds no more than half the threshold (the gap keeps it from flapping).
 *
 * Per process, in memory: each worker replica guards its own sends.
 */
export interface BreakerOptions {
  /** Distinct registrations within the window beyond which pruning stops. */
  readonly threshold: number;
  readonly windowMs: number;
  readonly now?: () => number;
  /** Called once when the breaker opens, with how many registrations tripped it. */
  readonly onOpen?: (count: number) => void;
  readonly onClose?: () => void;
}

export interface PruneBreaker {
  /** Records a token-related answer for one registration; true while pruning is allowed. */
  record(registrationId: string): boolean;
  /** Whether the breaker is open now (lets it close when no new answers arrive). */
  isOpen(): boolean;
}

export const defaultBreaker = { threshold: 20, windowMs: 10 * 60 * 1000 } as const;

export function createPruneBreaker(options: BreakerOptions): PruneBreaker {
  const now = options.now ?? Date.now;
  const closeAt = Math.floor(options.threshold / 2);
  // Registration id → time of its latest answer; Map order is oldest-first because a
  // repeated id is deleted and re-inserted.
  const seen = new Map<string, number>();
  let open = false;

  const update = (): boolean => {
    const horizon = now() - options.windowMs;
    for (const [id, at] of seen) {
      if (at > horizon) break;
      seen.delete(id);
    }
    if (!open && seen.size > options.threshold) {
      open = true;
      options.onOpen?.(seen.size);
    } else if (open && seen.size <= closeAt) {
      open = false;
      options.onClose?.();
    }
    return open;
  };

  return {
    record(registrationId) {
      seen.delete(registrationId);
      seen.set(registrationId, now());
      return !update();
    },
    isOpen: update,
  };
}

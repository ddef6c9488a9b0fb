/**
 * The prune breaker. FCM answers 400 INVALID_ARGUMENT (about the token) or 403
 * SENDER_ID_MISMATCH for a dead token — but a payload bug, a wrong project or a rotated
 * service account can make it answer the same for *every* device, and obeying would delete
 * every FCM registration of the instance. So those answers prune only while they stay what a
 * healthy instance sees: tokens dying on their own, a small share of the sends.
 *
 * It opens when, within the last `windowMs`, more *users* got such an answer than the
 * threshold: `share` of the FCM sends made in that window, and never less than `floor`.
 *
 * - Users, not registrations: one account's devices count once, however many registrations
 *   it made, so no single account can open it (and page the operators).
 * - A share of the sends, not a fixed count: at a million devices tokens die on their own
 *   faster than any fixed count allows (FCM expires a token unused for 270 days: thousands a
 *   day), and a breaker that opens on that stays open and never prunes again. The price: a
 *   fault of ours prunes up to that share of the window's sends before it opens (the app
 *   re-registers them on its next start).
 *
 * It closes once the window holds no more than half the threshold (the gap keeps it from
 * flapping). Per process, in memory: each worker replica guards, and counts, its own sends.
 */
export interface BreakerOptions {
  /** The threshold's least value, in distinct users within the window. */
  readonly floor: number;
  /** The threshold as a share (0–1) of the FCM sends within the window. */
  readonly share: number;
  readonly windowMs: number;
  readonly now?: () => number;
  /** Called once when the breaker opens, with how many users tripped it and the threshold. */
  readonly onOpen?: (users: number, threshold: number) => void;
  readonly onClose?: () => void;
}

/** The registration a send is for, as the breaker counts it. */
export interface BreakerSend {
  readonly id: string;
  readonly userId: string;
}

export interface PruneBreaker {
  /** Counts one FCM send and says whose registration it is for; call the result once it is judged. */
  sending(registration: BreakerSend): () => void;
  /** Records a token-related answer to a send in progress; true while pruning is allowed. */
  record(registrationId: string): boolean;
  /** Whether the breaker is open now (lets it close when no new answers arrive). */
  isOpen(): boolean;
}

export const defaultBreaker = { floor: 20, share: 0.01, windowMs: 10 * 60 * 1000 } as const;

/** Sends are counted in this many slices of the window: memory stays fixed at any volume. */
const slices = 60;

export function createPruneBreaker(options: BreakerOptions): PruneBreaker {
  const now = options.now ?? Date.now;
  const sends = createWindowCount(options.windowMs, now);
  // User id → time of their latest answer; Map order is oldest-first because a repeated user
  // is deleted and re-inserted.
  const seen = new Map<string, number>();
  // Registration id → its user, for the sends in progress (a registration sent twice at once
  // is counted by each).
  const inProgress = new Map<string, { userId: string; sends: number }>();
  let open = false;

  const threshold = () => Math.max(options.floor, Math.ceil(options.share * sends.total()));
  const update = (): boolean => {
    const horizon = now() - options.windowMs;
    for (const [user, at] of seen) {
      if (at > horizon) break;
      seen.delete(user);
    }
    const limit = threshold();
    if (!open && seen.size > limit) {
      open = true;
      options.onOpen?.(seen.size, limit);
    } else if (open && seen.size <= Math.floor(limit / 2)) {
      open = false;
      options.onClose?.();
    }
    return open;
  };

  return {
    sending(registration) {
      sends.add();
      const entry = inProgress.get(registration.id) ?? { userId: registration.userId, sends: 0 };
      entry.sends += 1;
      inProgress.set(registration.id, entry);
      return () => {
        entry.sends -= 1;
        if (entry.sends === 0 && inProgress.get(registration.id) === entry) inProgress.delete(registration.id);
      };
    },
    record(registrationId) {
      // A registration whose send was not registered with the breaker still counts, as its own user.
      const user = inProgress.get(registrationId)?.userId ?? `registration ${registrationId}`;
      seen.delete(user);
      seen.set(user, now());
      return !update();
    },
    isOpen: update,
  };
}

/** Events within the last `windowMs`, counted in `slices` slices of it. */
function createWindowCount(windowMs: number, now: () => number): { add(): void; total(): number } {
  const width = Math.max(1, Math.ceil(windowMs / slices));
  const counts: Array<{ slice: number; count: number }> = [];
  let sum = 0;
  const expire = () => {
    const oldest = Math.floor((now() - windowMs) / width);
    while (counts.length > 0 && counts[0]!.slice <= oldest) sum -= counts.shift()!.count;
  };
  return {
    add() {
      expire();
      const slice = Math.floor(now() / width);
      const last = counts.at(-1);
      if (last?.slice === slice) last.count += 1;
      else counts.push({ slice, count: 1 });
      sum += 1;
    },
    total() {
      expire();
      return sum;
    },
  };
}

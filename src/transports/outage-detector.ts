/**
 * The outage detector: tells an endpoint's own failure from an outage that is not
 * the device's doing, per origin — FCM (one origin), its OAuth token endpoint, and every
 * UnifiedPush origin (scheme://host:port of the endpoint URL).
 *
 * Each origin keeps a sliding window of its latest send result per registration (distinct
 * registrations, so one endpoint retried often weighs one). The rules (docs/transports.md):
 *
 * - **outage**: at least `minFailing` registrations failing and more failing than delivered in
 *   the window. While in outage, nothing is counted against a device, and only one send per
 *   `probeEveryMs` is let through to the origin (a probe); the rest are deferred unsent.
 * - **the end of an outage**: the origin's last two results, from distinct registrations, were
 *   delivered (or the window holds more deliveries than failures); or no result at all came
 *   for `quietMs`. `onExit` is told either way: the devices deferred by the outage are woken.
 * - **counted toward the ten** (docs/design.md, Pruning): a failure the endpoint answered (`endpoint`) while
 *   its origin is not in outage — for FCM only while FCM delivered to another registration
 *   within `evidenceMs` (positive evidence that FCM works and the token does not); a failure
 *   without an answer (`network`) for UnifiedPush only when another registration was
 *   delivered within `evidenceMs` anywhere (our network works), never for FCM; a failure before
 *   the request left (`token-endpoint`) or a bug of ours (`internal`) never.
 *
 * Pure and in memory; time is passed in (the workflow's clock, like every coalescing decision).
 * Replicas share their windows through PostgreSQL (src/worker/transport-health.ts): `summaries` is what this
 * worker publishes, `setRemote` what the others published.
 */
import type { FailureBlame } from './types.js';

export type Provider = 'fcm' | 'fcm-oauth' | 'unifiedpush';

/** `<provider> <origin>`, e.g. `unifiedpush https://ntfy.sh`. What `backoff_origin` holds. */
export type OriginKey = string;

export function originKey(provider: Provider, origin: string): OriginKey {
  return `${provider} ${origin}`;
}

export function parseOriginKey(key: OriginKey): { provider: string; origin: string } {
  const space = key.indexOf(' ');
  return space < 0 ? { provider: key, origin: '' } : { provider: key.slice(0, space), origin: key.slice(space + 1) };
}

export interface OriginSummary {
  /** Distinct registrations whose latest result in the window was a delivery / a failure. */
  readonly delivered: number;
  readonly failed: number;
  readonly lastDeliveredAt: number | null;
  readonly inOutage: boolean;
}

export interface OutageDetectorOptions {
  readonly windowMs?: number;
  readonly evidenceMs?: number;
  readonly minFailing?: number;
  readonly probeEveryMs?: number;
  readonly quietMs?: number;
  readonly onEnter?: (key: OriginKey, summary: OriginSummary) => void;
  readonly onExit?: (key: OriginKey, why: 'recovered' | 'quiet') => void;
}

export const outageDefaults = {
  windowMs: 60_000,
  evidenceMs: 10 * 60_000,
  minFailing: 2,
  probeEveryMs: 5_000,
  quietMs: 10 * 60_000,
} as const;

/** The key of the row that carries a worker's latest delivery anywhere (network evidence). */
export const anyOriginKey = '*';

export interface OutageDetector {
  /** May a send to this origin go out now? Always, unless in outage and no probe is due. */
  admit(key: OriginKey, now: number): boolean;
  /** Records the result of a send that went out (ok: delivered). */
  record(key: OriginKey, registrationId: string, ok: boolean, now: number, retryAfterMs?: number): void;
  /** Whether this failure (already recorded) counts toward the registration's ten. */
  counts(key: OriginKey, registrationId: string, blame: FailureBlame, now: number): boolean;
  inOutage(key: OriginKey): boolean;
  /** What the origin last asked for with Retry-After, still to run at `now`. */
  retryAfterHint(key: OriginKey, now: number): number | undefined;
  /** Origins in outage now. */
  outages(): OriginKey[];
  /** This worker's window per origin worth sharing (failing, in outage, FCM, or of interest to others). */
  summaries(now: number): Map<OriginKey, OriginSummary>;
  /** The other workers' windows (summed per origin); re-evaluates every origin. */
  setRemote(remote: ReadonlyMap<OriginKey, OriginSummary>, now: number): void;
  /** Ages windows and forgets idle origins; ends outages that went quiet. */
  tick(now: number): void;
}

interface Delivery {
  readonly registrationId: string;
  readonly at: number;
}

interface OriginState {
  readonly results: Map<string, { ok: boolean; at: number }>;
  /** The last two results, newest last (for the end of an outage). */
  recent: Array<{ registrationId: string; ok: boolean }>;
  deliveries: Delivery[];
  lastResultAt: number;
  outageSince: number | undefined;
  probeAt: number;
  retryAfterUntil: number;
  remote: OriginSummary | undefined;
}

/** The last two deliveries of distinct registrations: "someone else was delivered recently". */
function addDelivery(deliveries: Delivery[], registrationId: string, at: number): Delivery[] {
  return [...deliveries.filter((d) => d.registrationId !== registrationId), { registrationId, at }].slice(-2);
}

export function createOutageDetector(options: OutageDetectorOptions = {}): OutageDetector {
  const windowMs = options.windowMs ?? outageDefaults.windowMs;
  const evidenceMs = options.evidenceMs ?? outageDefaults.evidenceMs;
  const minFailing = options.minFailing ?? outageDefaults.minFailing;
  const probeEveryMs = options.probeEveryMs ?? outageDefaults.probeEveryMs;
  const quietMs = options.quietMs ?? outageDefaults.quietMs;
  const origins = new Map<OriginKey, OriginState>();
  let anyDeliveries: Delivery[] = [];
  let remoteAnyDeliveredAt = -Infinity;

  const state = (key: OriginKey): OriginState => {
    let found = origins.get(key);
    if (found === undefined) {
      found = {
        results: new Map(),
        recent: [],
        deliveries: [],
        lastResultAt: -Infinity,
        outageSince: undefined,
        probeAt: -Infinity,
        retryAfterUntil: -Infinity,
        remote: undefined,
      };
      origins.set(key, found);
    }
    return found;
  };

  const age = (origin: OriginState, now: number): void => {
    const horizon = now - windowMs;
    for (const [id, result] of origin.results) {
      if (result.at > horizon) break; // insertion order is time order (a repeated id moves to the end)
      origin.results.delete(id);
    }
  };

  const local = (origin: OriginState): { delivered: number; failed: number } => {
    let delivered = 0;
    for (const result of origin.results.values()) if (result.ok) delivered++;
    return { delivered, failed: origin.results.size - delivered };
  };

  const combined = (origin: OriginState): { delivered: number; failed: number } => {
    const own = local(origin);
    return { delivered: own.delivered + (origin.remote?.delivered ?? 0), failed: own.failed + (origin.remote?.failed ?? 0) };
  };

  const evaluate = (key: OriginKey, origin: OriginState, now: number): void => {
    age(origin, now);
    const { delivered, failed } = combined(origin);
    if (origin.outageSince === undefined) {
      if (failed >= minFailing && failed > delivered) {
        origin.outageSince = now;
        options.onEnter?.(key, { delivered, failed, lastDeliveredAt: origin.deliveries.at(-1)?.at ?? null, inOutage: true });
      }
      return;
    }
    const lastTwoDelivered =
      origin.recent.length === 2 && origin.recent.every((r) => r.ok) && origin.recent[0]!.registrationId !== origin.recent[1]!.registrationId;
    if (lastTwoDelivered || (delivered >= 1 && delivered > failed)) {
      origin.outageSince = undefined;
      options.onExit?.(key, 'recovered');
    } else if (failed === 0 && now - Math.max(origin.lastResultAt, origin.outageSince) > quietMs) {
      origin.outageSince = undefined;
      options.onExit?.(key, 'quiet');
    }
  };

  const delivered = (deliveries: readonly Delivery[], registrationId: string, now: number): boolean =>
    deliveries.some((d) => d.registrationId !== registrationId && now - d.at <= evidenceMs);

  return {
    admit(key, now) {
      const origin = origins.get(key);
      if (origin?.outageSince === undefined) return true;
      if (now - origin.probeAt < probeEveryMs) return false;
      origin.probeAt = now;
      return true;
    },

    record(key, registrationId, ok, now, retryAfterMs) {
      const origin = state(key);
      origin.results.delete(registrationId);
      origin.results.set(registrationId, { ok, at: now });
      origin.recent = [...origin.recent, { registrationId, ok }].slice(-2);
      origin.lastResultAt = Math.max(origin.lastResultAt, now);
      if (ok) {
        origin.deliveries = addDelivery(origin.deliveries, registrationId, now);
        anyDeliveries = addDelivery(anyDeliveries, registrationId, now);
      }
      if (retryAfterMs !== undefined) origin.retryAfterUntil = Math.max(origin.retryAfterUntil, now + retryAfterMs);
      evaluate(key, origin, now);
    },

    counts(key, registrationId, blame, now) {
      if (blame === 'token-endpoint' || blame === 'internal') return false;
      const origin = origins.get(key);
      if (origin?.outageSince !== undefined) return false;
      const provider = parseOriginKey(key).provider;
      const remoteRecent = (at: number | null | undefined) => at !== null && at !== undefined && now - at <= evidenceMs;
      if (provider === 'fcm') {
        // FCM's answer about a token says nothing unless FCM is delivering to other tokens.
        if (blame !== 'endpoint') return false;
        return delivered(origin?.deliveries ?? [], registrationId, now) || remoteRecent(origin?.remote?.lastDeliveredAt);
      }
      if (blame === 'endpoint') return true; // the origin answered: our network reached it
      // No answer: the endpoint's, or our network's? Only when others were delivered lately.
      return delivered(anyDeliveries, registrationId, now) || remoteRecent(remoteAnyDeliveredAt);
    },

    inOutage: (key) => origins.get(key)?.outageSince !== undefined,

    retryAfterHint(key, now) {
      const until = origins.get(key)?.retryAfterUntil ?? -Infinity;
      return until > now ? until - now : undefined;
    },

    outages: () => [...origins].filter(([, o]) => o.outageSince !== undefined).map(([key]) => key),

    summaries(now) {
      const out = new Map<OriginKey, OriginSummary>();
      for (const [key, origin] of origins) {
        age(origin, now);
        const own = local(origin);
        const shared =
          own.failed > 0 || origin.outageSince !== undefined || origin.remote !== undefined || parseOriginKey(key).provider !== 'unifiedpush';
        if (!shared || (own.delivered === 0 && own.failed === 0 && origin.deliveries.length === 0)) continue;
        out.set(key, { ...own, lastDeliveredAt: origin.deliveries.at(-1)?.at ?? null, inOutage: origin.outageSince !== undefined });
      }
      const lastAny = anyDeliveries.at(-1)?.at;
      if (lastAny !== undefined) out.set(anyOriginKey, { delivered: 0, failed: 0, lastDeliveredAt: lastAny, inOutage: false });
      return out;
    },

    setRemote(remote, now) {
      remoteAnyDeliveredAt = remote.get(anyOriginKey)?.lastDeliveredAt ?? -Infinity;
      for (const [key, origin] of origins) if (!remote.has(key)) origin.remote = undefined;
      for (const [key, summary] of remote) {
        if (key === anyOriginKey) continue;
        state(key).remote = summary;
      }
      for (const [key, origin] of origins) evaluate(key, origin, now);
    },

    tick(now) {
      for (const [key, origin] of origins) {
        evaluate(key, origin, now);
        const idle =
          origin.results.size === 0 && origin.outageSince === undefined && origin.remote === undefined && now - origin.lastResultAt > evidenceMs;
        if (idle) origins.delete(key);
      }
    },
  };
}

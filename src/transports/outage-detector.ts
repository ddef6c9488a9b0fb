/**
 * The outage detector: tells an endpoint's own failure from one that is not the device's
 * doing, per origin — FCM (one origin), its OAuth token endpoint, and every UnifiedPush origin
 * (scheme://host:port of the endpoint URL) — and across origins.
 *
 * Each origin keeps the latest send result of every registration active within `windowMs`
 * (distinct registrations: one endpoint retried often weighs one). The rules (docs/transports.md):
 *
 * - **outage**: at least `minFailing` registrations failing and at least `failingShare` of the
 *   origin's recently active registrations failing. A few dead endpoints on a busy origin are a
 *   small share; two on a quiet one are under the floor: either way they are dead endpoints,
 *   counted and pruned, and nobody else's wakes wait for them. While in outage, nothing is
 *   counted against a device, and one send per `probeEveryMs` goes out (a probe), given to a
 *   registration that delivered within `evidenceMs` while there is one; the rest are deferred.
 * - **the end of an outage**: the origin's last two results, from distinct registrations, were
 *   delivered (or it no longer meets the rule above and delivers); or no result at all came
 *   for `quietMs`. `onExit` is told either way: the devices deferred by the outage are woken.
 *   A recovered origin forgets the failures of its window: each registration starts afresh.
 *   Once a probe is delivered, the next send of another registration is admitted at once as
 *   the confirming probe (`confirming`): on a quiet instance nothing else would come for a
 *   probe interval or more, while every device held back waits for that second delivery.
 * - **ours**: the same failure (`signature`, e.g. "UnifiedPush 401/403") answered within the
 *   window by at least `sharedMinOrigins` origins and at least `sharedShare` of the origins
 *   active in it is a fault on our side (a rotated VAPID key, our network): it never counts.
 * - **counted toward the ten** (docs/design.md, Pruning): a failure the endpoint answered (`endpoint`) while
 *   its origin is not in outage and the failure is not ours — for FCM only while FCM delivered
 *   to another registration within `evidenceMs` (positive evidence that FCM works and the token
 *   does not); a failure without an answer (`network`) for UnifiedPush only when another
 *   registration was delivered within `evidenceMs` anywhere (our network works), never for FCM;
 *   a failure before the request left (`token-endpoint`) or a bug of ours (`internal`) never.
 *
 * Pure and in memory; time is passed in (the workflow's clock, like every coalescing decision).
 * Replicas share their per-origin windows through PostgreSQL (src/worker/outage-coordinator.ts): `summaries`
 * is what this worker publishes, `setRemote` what the others published. The cross-origin rule
 * and the choice of probes use this worker's own results.
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
  readonly failingShare?: number;
  readonly probeEveryMs?: number;
  readonly quietMs?: number;
  readonly sharedMinOrigins?: number;
  readonly sharedShare?: number;
  readonly onEnter?: (key: OriginKey, summary: OriginSummary) => void;
  readonly onExit?: (key: OriginKey, why: 'recovered' | 'quiet') => void;
  /** A failure became ours (answered alike by many origins): told once per signature and episode. */
  readonly onShared?: (signature: string, origins: number, activeOrigins: number) => void;
}

export const outageDefaults = {
  /** "Recently active": a send result within the last 5 minutes. */
  windowMs: 5 * 60_000,
  evidenceMs: 10 * 60_000,
  /** An outage needs at least 3 distinct registrations failing… */
  minFailing: 3,
  /** …and at least half of the origin's recently active registrations. */
  failingShare: 0.5,
  probeEveryMs: 5_000,
  quietMs: 10 * 60_000,
  /** A failure answered by 3 origins or more, and by half the origins active, is ours. */
  sharedMinOrigins: 3,
  sharedShare: 0.5,
} as const;

/** While someone delivered recently, anyone else gets a probe only when none went out for this many probe intervals. */
const probeFallbackIntervals = 6;
/** Registrations remembered per origin as "delivered recently" (probe candidates). */
const deliveredKept = 64;

/** The key of the row that carries a worker's latest delivery anywhere (network evidence). */
export const anyOriginKey = '*';

export interface OutageDetector {
  /** May this registration's send to this origin go out now? Always, unless in outage and it is not the probe. */
  admit(key: OriginKey, registrationId: string, now: number): boolean;
  /**
   * Records the result of a send that went out (ok: delivered). `signature` names a failure
   * alike across origins (a fixed text, never an address), for the cross-origin rule.
   */
  record(key: OriginKey, registrationId: string, ok: boolean, now: number, retryAfterMs?: number, signature?: string): void;
  /** Whether this failure (already recorded) counts toward the registration's ten. */
  counts(key: OriginKey, registrationId: string, blame: FailureBlame, now: number): boolean;
  inOutage(key: OriginKey): boolean;
  /** What the origin last asked for with Retry-After, still to run at `now`. */
  retryAfterHint(key: OriginKey, now: number): number | undefined;
  /** Origins in outage now. */
  outages(): OriginKey[];
  /**
   * In outage, and a probe was just delivered: the registration it was delivered to, whose
   * delivery awaits another registration's to end the outage (its send is admitted at once).
   */
  confirming(key: OriginKey): string | undefined;
  /** Registrations delivered on this origin within `evidenceMs`, newest first (probe candidates). */
  deliveredRecently(key: OriginKey, now: number): string[];
  /** This worker's window per origin worth sharing (failing, in outage, FCM, or of interest to others). */
  summaries(now: number): Map<OriginKey, OriginSummary>;
  /** The other workers' windows (summed per origin); re-evaluates every origin. */
  setRemote(remote: ReadonlyMap<OriginKey, OriginSummary>, now: number): void;
  /** Ages windows and forgets idle origins; ends outages that went quiet. */
  tick(now: number): void;
}

interface Result {
  readonly ok: boolean;
  readonly at: number;
  readonly signature: string | undefined;
}

interface OriginState {
  /** Latest result per registration, oldest first (a repeated id moves to the end). */
  readonly results: Map<string, Result>;
  /** The last two results, newest last (for the end of an outage). */
  recent: Array<{ registrationId: string; ok: boolean }>;
  /** Registrations delivered lately, oldest first, at most `deliveredKept`. */
  readonly delivered: Map<string, number>;
  lastResultAt: number;
  outageSince: number | undefined;
  probeAt: number;
  /** In outage: the registration a probe was just delivered to, until another registration's send is admitted. */
  confirmAfter: string | undefined;
  retryAfterUntil: number;
  remote: OriginSummary | undefined;
}

function remember(map: Map<string, number>, id: string, at: number, keep: number): void {
  map.delete(id);
  map.set(id, at);
  if (map.size > keep) map.delete(map.keys().next().value!);
}

export function createOutageDetector(options: OutageDetectorOptions = {}): OutageDetector {
  const windowMs = options.windowMs ?? outageDefaults.windowMs;
  const evidenceMs = options.evidenceMs ?? outageDefaults.evidenceMs;
  const minFailing = options.minFailing ?? outageDefaults.minFailing;
  const failingShare = options.failingShare ?? outageDefaults.failingShare;
  const probeEveryMs = options.probeEveryMs ?? outageDefaults.probeEveryMs;
  const quietMs = options.quietMs ?? outageDefaults.quietMs;
  const sharedMinOrigins = options.sharedMinOrigins ?? outageDefaults.sharedMinOrigins;
  const sharedShare = options.sharedShare ?? outageDefaults.sharedShare;
  const origins = new Map<OriginKey, OriginState>();
  /** The latest deliveries anywhere (two distinct registrations): "someone else was delivered recently". */
  const anyDelivered = new Map<string, number>();
  let remoteAnyDeliveredAt = -Infinity;
  /** Per failure signature, the origins that answered it and when (latest). */
  const signatures = new Map<string, Map<OriginKey, number>>();
  const sharedNow = new Set<string>();

  const state = (key: OriginKey): OriginState => {
    let found = origins.get(key);
    if (found === undefined) {
      found = {
        results: new Map(),
        recent: [],
        delivered: new Map(),
        lastResultAt: -Infinity,
        outageSince: undefined,
        probeAt: -Infinity,
        confirmAfter: undefined,
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
      if (result.at > horizon) break; // insertion order is time order
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

  const isOutage = (delivered: number, failed: number): boolean => failed >= minFailing && failed >= failingShare * (failed + delivered);

  const lastDeliveredAt = (origin: OriginState): number | null => {
    let last: number | null = null;
    for (const at of origin.delivered.values()) last = at; // oldest first: the last is the latest
    return last;
  };

  const evaluate = (key: OriginKey, origin: OriginState, now: number): void => {
    age(origin, now);
    const { delivered, failed } = combined(origin);
    if (origin.outageSince === undefined) {
      if (isOutage(delivered, failed)) {
        origin.outageSince = now;
        origin.probeAt = now; // the failure that found it was the first probe
        options.onEnter?.(key, { delivered, failed, lastDeliveredAt: lastDeliveredAt(origin), inOutage: true });
      }
      return;
    }
    const lastTwoDelivered =
      origin.recent.length === 2 && origin.recent.every((r) => r.ok) && origin.recent[0]!.registrationId !== origin.recent[1]!.registrationId;
    if (lastTwoDelivered || (delivered >= 1 && !isOutage(delivered, failed))) {
      origin.outageSince = undefined;
      origin.confirmAfter = undefined;
      // The failures of the window were the outage's: each registration is judged afresh.
      for (const [id, result] of origin.results) if (!result.ok) origin.results.delete(id);
      options.onExit?.(key, 'recovered');
    } else if (failed === 0 && now - Math.max(origin.lastResultAt, origin.outageSince) > quietMs) {
      origin.outageSince = undefined;
      origin.confirmAfter = undefined;
      options.onExit?.(key, 'quiet');
    }
  };

  const someoneElse = (deliveries: ReadonlyMap<string, number>, registrationId: string, now: number): boolean => {
    for (const [id, at] of deliveries) if (id !== registrationId && now - at <= evidenceMs) return true;
    return false;
  };

  /** Whether the failure with this signature is answered alike by many origins now (ours). */
  const shared = (signature: string | undefined, now: number): boolean => {
    if (signature === undefined) return false;
    const answering = [...(signatures.get(signature) ?? new Map<OriginKey, number>()).values()].filter((at) => now - at <= windowMs).length;
    let isShared = false;
    let active = 0;
    if (answering >= sharedMinOrigins) {
      for (const origin of origins.values()) if (now - origin.lastResultAt <= windowMs) active++;
      isShared = answering >= sharedShare * active;
    }
    if (isShared && !sharedNow.has(signature)) {
      sharedNow.add(signature);
      options.onShared?.(signature, answering, active);
    } else if (!isShared) sharedNow.delete(signature);
    return isShared;
  };

  const recordSignature = (key: OriginKey, signature: string, now: number): void => {
    let answered = signatures.get(signature);
    if (answered === undefined) signatures.set(signature, (answered = new Map()));
    answered.delete(key);
    answered.set(key, now);
  };

  return {
    admit(key, registrationId, now) {
      const origin = origins.get(key);
      if (origin?.outageSince === undefined) return true;
      if (origin.confirmAfter !== undefined && origin.confirmAfter !== registrationId) {
        // A probe was just delivered: another registration's send confirms the end, or not.
        origin.confirmAfter = undefined;
        origin.probeAt = now;
        return true;
      }
      const sinceProbe = now - origin.probeAt;
      if (sinceProbe < probeEveryMs) return false;
      // The probe slot goes to a registration that worked a moment ago: its answer is about
      // the origin. A dead endpoint (never delivered) gets it only when nobody better tried.
      const provenRecently = (origin.delivered.get(registrationId) ?? -Infinity) >= now - evidenceMs;
      const anyoneProven = someoneElse(origin.delivered, registrationId, now);
      if (!provenRecently && anyoneProven && sinceProbe < probeFallbackIntervals * probeEveryMs) return false;
      origin.probeAt = now;
      return true;
    },

    record(key, registrationId, ok, now, retryAfterMs, signature) {
      const origin = state(key);
      origin.results.delete(registrationId);
      origin.results.set(registrationId, { ok, at: now, signature: ok ? undefined : signature });
      origin.recent = [...origin.recent, { registrationId, ok }].slice(-2);
      origin.lastResultAt = Math.max(origin.lastResultAt, now);
      if (origin.outageSince !== undefined) origin.confirmAfter = ok ? registrationId : undefined;
      if (ok) {
        remember(origin.delivered, registrationId, now, deliveredKept);
        remember(anyDelivered, registrationId, now, 2);
      } else if (signature !== undefined) recordSignature(key, signature, now);
      if (retryAfterMs !== undefined) origin.retryAfterUntil = Math.max(origin.retryAfterUntil, now + retryAfterMs);
      evaluate(key, origin, now);
    },

    counts(key, registrationId, blame, now) {
      if (blame === 'token-endpoint' || blame === 'internal') return false;
      const origin = origins.get(key);
      if (origin?.outageSince !== undefined) return false;
      if (shared(origin?.results.get(registrationId)?.signature, now)) return false;
      const provider = parseOriginKey(key).provider;
      const remoteRecent = (at: number | null | undefined) => at !== null && at !== undefined && now - at <= evidenceMs;
      if (provider === 'fcm') {
        // FCM's answer about a token says nothing unless FCM is delivering to other tokens.
        if (blame !== 'endpoint') return false;
        return someoneElse(origin?.delivered ?? new Map(), registrationId, now) || remoteRecent(origin?.remote?.lastDeliveredAt);
      }
      if (blame === 'endpoint') return true; // the origin answered: our network reached it
      // No answer: the endpoint's, or our network's? Only when others were delivered lately.
      return someoneElse(anyDelivered, registrationId, now) || remoteRecent(remoteAnyDeliveredAt);
    },

    inOutage: (key) => origins.get(key)?.outageSince !== undefined,

    retryAfterHint(key, now) {
      const until = origins.get(key)?.retryAfterUntil ?? -Infinity;
      return until > now ? until - now : undefined;
    },

    outages: () => [...origins].filter(([, o]) => o.outageSince !== undefined).map(([key]) => key),

    confirming: (key) => {
      const origin = origins.get(key);
      return origin?.outageSince === undefined ? undefined : origin.confirmAfter;
    },

    deliveredRecently(key, now) {
      const delivered = origins.get(key)?.delivered ?? new Map<string, number>();
      return [...delivered]
        .filter(([, at]) => now - at <= evidenceMs)
        .map(([id]) => id)
        .reverse();
    },

    summaries(now) {
      const out = new Map<OriginKey, OriginSummary>();
      for (const [key, origin] of origins) {
        age(origin, now);
        const own = local(origin);
        const last = lastDeliveredAt(origin);
        const worthSharing =
          own.failed > 0 || origin.outageSince !== undefined || origin.remote !== undefined || parseOriginKey(key).provider !== 'unifiedpush';
        if (!worthSharing || (own.delivered === 0 && own.failed === 0 && last === null)) continue;
        out.set(key, { ...own, lastDeliveredAt: last, inOutage: origin.outageSince !== undefined });
      }
      let lastAny: number | undefined;
      for (const at of anyDelivered.values()) lastAny = Math.max(lastAny ?? at, at);
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
      for (const [signature, answered] of signatures) {
        for (const [key, at] of answered) if (now - at > windowMs) answered.delete(key);
        if (answered.size === 0) {
          signatures.delete(signature);
          sharedNow.delete(signature);
        }
      }
    },
  };
}

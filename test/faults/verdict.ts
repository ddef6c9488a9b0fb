/**
 * The verdict of a fault scenario, from records that do not depend on the service's own
 * account of itself: what the distributor received (each wake's arrival), what the phones did
 * (each drain attempt and its answer), what PostgreSQL saw (test triggers: every claim with
 * its `$now`, every drain that cleared an outstanding wake, every pending row drained), and
 * when the scenario killed a worker or stopped Temporal. Pure: the scenarios gather the
 * records, this decides.
 *
 * Per device the claims are totally ordered (one workflow; the claim is one conditional
 * UPDATE under the row lock), and every send of claim k happens after claim k was written and
 * before claim k+1 (the workflow runs claim → send → next look in order; a worker killed
 * mid-task is dead before the retried task looks again). So each wake belongs to the last
 * claim logged before it arrived. A wake is a duplicate when it is
 *
 *   - a re-send: a second wake of one claim. Only one path sends a claim again: a workflow
 *     task lost after its claim (worker killed, completion lost with a Temporal restart) is
 *     retried, finds its own claim in PostgreSQL still outstanding — not drained — and, not
 *     knowing whether the lost task's POST went out, sends it (at least once). So a re-send
 *     needs a lost task (a worker kill or a Temporal stop after the claim) and no drain of
 *     the claim before the retried task's look;
 *   - an escalation is no duplicate: a DM behind an outstanding NORMAL wake gets one HIGH wake
 *     once the minimum interval allows (docs/design.md, Escalation of a NORMAL wake for a DM).
 *     It supersedes the NORMAL claim: when a lost task left that claim unsent, the retried task
 *     may find the escalation due and send it instead, and the phone is woken all the same — so
 *     a claim followed by a delivered escalation is not lost;
 *   - a re-wake of a delivered, undrained wake: a claim made while the previous claim's wake,
 *     which the phone had received, was still outstanding (no drain committed since) — "a wake
 *     that arrives while a previous one was not drained". Re-wakes are at least R apart and
 *     stop at the drain, hence per delivered claim p at most ⌊(e_p − now_p) / R⌋ of them, with
 *     now_p its claim time and e_p when the phone's drain of p's wake completed.
 *
 * The bound (docs/architecture.md, "Crashes and duplicate wakes") is the sum of both; the
 * verdict checks each duplicate against the condition that explains it, and the rules the
 * bound rests on: claims at least M (PUSH_MIN_INTERVAL_MS) apart and R (PUSH_REWAKE_AFTER_MS)
 * apart when the later one is a re-wake; every wake preceded by a claim; every claim's wake
 * delivered at least once (none lost).
 */
import type { AuditLog, ClaimEntry } from './audit.js';
import type { DrainAttempt, Phone } from './phones.js';

/**
 * A retried task's look precedes its re-send's POST by a claim query and a send activity's
 * start; a drain committed more than this before the re-send arrived was certainly before
 * the look. (A workflow task is retried ~10 s after the loss, far beyond this.)
 */
const lookBeforeResendMs = 5_000;

export interface VerdictInput {
  readonly phones: readonly Phone[];
  readonly registrationOf: ReadonlyMap<string, string>; // userId → registration id
  readonly audit: AuditLog;
  /** Messages per user and channel that the published events should have counted. */
  readonly expected: ReadonlyMap<string, ReadonlyMap<string, number>>;
  /** When a workflow task could have been lost: a worker SIGKILLed, the Temporal server stopped. */
  readonly taskLossesAt: readonly number[];
  readonly minIntervalMs: number;
  readonly rewakeAfterMs: number;
}

export interface Verdict {
  readonly wakes: number;
  readonly claims: number;
  readonly resends: number;
  readonly rewakeDuplicates: number;
  /** Σ ⌊(e_p − now_p) / R⌋ over the delivered claims that start an undrained episode. */
  readonly rewakeBound: number;
  /** Re-sends allowed: per claim, the task losses between the claim and its last wake. */
  readonly resendBound: number;
  /** Phone's view: wakes that arrived less than M after the previous one, each of its own claim unless counted above. */
  readonly closeArrivals: number;
  readonly closestArrivalMs: number | undefined;
  /** Drain attempts whose connection died after sending: their answer may be lost with a killed api. */
  readonly answerlessDrains: number;
  /** Messages drained in PostgreSQL whose answer never reached the phone. */
  readonly lostAnswers: number;
  readonly messagesExpected: number;
  readonly messagesDrained: number;
  readonly messagesReceived: number;
  /** Broken rules, each a sentence naming the device: must be empty. */
  readonly violations: readonly string[];
}

export function judge(input: VerdictInput): Verdict {
  const { audit, minIntervalMs: M, rewakeAfterMs: R } = input;
  const violations: string[] = [];
  const claimsOf = groupBy(audit.claims, (c) => c.registrationId);
  const drainsOf = groupBy(audit.drains, (d) => d.registrationId);
  const totals = { wakes: 0, claims: 0, resends: 0, rewakeDuplicates: 0, rewakeBound: 0, resendBound: 0, closeArrivals: 0 };
  const messages = { expected: 0, drained: 0, received: 0, answerlessDrains: 0, lostAnswers: 0 };
  let closestArrivalMs: number | undefined;

  for (const phone of input.phones) {
    const name = `device ${phone.deviceId}`;
    const registrationId = input.registrationOf.get(phone.userId);
    if (registrationId === undefined) {
      violations.push(`${name}: no registration`);
      continue;
    }
    const claims = claimsOf.get(registrationId) ?? [];
    const drainCommits = (drainsOf.get(registrationId) ?? []).map((d) => d.at);
    totals.wakes += phone.wakes.length;
    totals.claims += claims.length;

    // The service's interval rules, on the claims themselves.
    for (const claim of claims) {
      if (claim.previous === null) continue;
      const required = claim.rewake ? R : M;
      if (claim.now - claim.previous < required) {
        violations.push(
          `${name}: a ${claim.rewake ? 're-wake' : 'wake'} claimed ${claim.now - claim.previous} ms after the previous claim (needs ${required})`,
        );
      }
    }

    // Each wake belongs to the last claim written before it arrived.
    const wakesOf = claims.map(() => [] as number[]);
    for (const [i, at] of phone.wakes.entries()) {
      const k = lastIndexWhere(claims, (c) => c.at <= at);
      if (k < 0) violations.push(`${name}: wake #${i + 1} arrived with no claim before it`);
      else wakesOf[k]!.push(at);
      const gap = i > 0 ? at - phone.wakes[i - 1]! : undefined;
      if (gap === undefined) continue;
      if (gap < M) totals.closeArrivals++;
      if (closestArrivalMs === undefined || gap < closestArrivalMs) closestArrivalMs = gap;
    }

    // No claim lost; re-sends only after a lost task, and only of an undrained claim.
    for (const [k, arrivals] of wakesOf.entries()) {
      const claim = claims[k]!;
      const escalatedAndDelivered = claims[k + 1]?.escalation === true && wakesOf[k + 1]!.length > 0;
      if (arrivals.length === 0 && !escalatedAndDelivered)
        violations.push(`${name}: the wake claimed at ${iso(claim.now)} never reached the distributor`);
      const losses = input.taskLossesAt.filter((t) => t > claim.at && t < (arrivals.at(-1) ?? claim.at)).length;
      const extra = Math.max(0, arrivals.length - 1);
      totals.resends += extra;
      totals.resendBound += losses;
      if (extra > losses)
        violations.push(`${name}: the wake claimed at ${iso(claim.now)} arrived ${arrivals.length} times after ${losses} lost workflow task(s)`);
      for (const resent of arrivals.slice(1)) {
        const drained = drainCommits.find((t) => t > claim.at && t < resent - lookBeforeResendMs);
        if (drained !== undefined)
          violations.push(`${name}: the wake claimed at ${iso(claim.now)} was sent again at ${iso(resent)}, after a drain at ${iso(drained)}`);
      }
    }

    // Re-wakes of delivered, undrained wakes: each explained, and bounded per episode.
    const attempts = phone.drains.flat();
    const delivered = (k: number) => wakesOf[k]!.length > 0;
    const isRewakeDuplicate = (k: number) => k > 0 && claims[k]!.rewake && delivered(k) && delivered(k - 1);
    for (const [k, claim] of claims.entries()) {
      if (!delivered(k)) continue;
      const drainedAt = drainCompleted(attempts, wakesOf[k]![0]!);
      if (!isRewakeDuplicate(k)) totals.rewakeBound += Math.floor(((drainedAt ?? Number.POSITIVE_INFINITY) - claim.now) / R);
      const next = claims[k + 1];
      if (next === undefined || !isRewakeDuplicate(k + 1)) continue;
      totals.rewakeDuplicates++;
      if (drainedAt !== undefined && next.at > drainedAt) {
        violations.push(`${name}: re-wake claimed at ${iso(next.at)}, after the phone's drain of the wake it repeats completed at ${iso(drainedAt)}`);
      }
    }

    // Every message: counted once in push_pending, drained once, answered to the phone.
    const expected = sum(input.expected.get(phone.userId)?.values() ?? []);
    const drained = audit.drainedMessages.get(registrationId) ?? 0;
    const received = sum(phone.received.values());
    const answerless = attempts.filter((a) => a.outcome === 'no-answer').length;
    messages.expected += expected;
    messages.drained += drained;
    messages.received += received;
    messages.answerlessDrains += answerless;
    if (drained !== expected) violations.push(`${name}: ${expected} messages published for it, ${drained} drained from push_pending`);
    if (answerless === 0) {
      for (const [channel, count] of input.expected.get(phone.userId) ?? []) {
        const got = phone.received.get(channel) ?? 0;
        if (got !== count) violations.push(`${name}: channel ${channel}: ${count} messages published, drains returned ${got}`);
      }
    } else if (received > drained) {
      violations.push(`${name}: drains returned ${received} messages, more than the ${drained} drained`);
    } else {
      messages.lostAnswers += drained - received;
    }
    const refused = attempts.find((a) => a.status === 404 || a.status === 401);
    if (refused !== undefined) violations.push(`${name}: drain answered ${refused.status}`);
  }
  if (totals.rewakeDuplicates > totals.rewakeBound)
    violations.push(`${totals.rewakeDuplicates} re-wake duplicates exceed the bound ${totals.rewakeBound}`);

  return {
    ...totals,
    closestArrivalMs,
    answerlessDrains: messages.answerlessDrains,
    lostAnswers: messages.lostAnswers,
    messagesExpected: messages.expected,
    messagesDrained: messages.drained,
    messagesReceived: messages.received,
    violations,
  };
}

/** When the first drain that answered 200 and started after `since` completed. */
function drainCompleted(attempts: readonly DrainAttempt[], since: number): number | undefined {
  return attempts.find((a) => a.outcome === 'ok' && a.start >= since)?.end;
}

function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const group = groups.get(k);
    if (group === undefined) groups.set(k, [item]);
    else group.push(item);
  }
  return groups;
}

function lastIndexWhere(claims: readonly ClaimEntry[], test: (claim: ClaimEntry) => boolean): number {
  for (let i = claims.length - 1; i >= 0; i--) if (test(claims[i]!)) return i;
  return -1;
}

function sum(values: Iterable<number>): number {
  let total = 0;
  for (const v of values) total += v;
  return total;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

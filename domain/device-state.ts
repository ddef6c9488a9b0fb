/**
 * The coalescing state of one device, as its workflow believes it, and when to look at
 * PostgreSQL next. Pure and deterministic: no I/O, no clock — callers pass the workflow time in.
 * The times come from the wake policy (wake-policy.ts): this class only decides when a look
 * could find a wake allowed, given what it last saw and the signals since.
 *
 * PostgreSQL is the truth; this is a cache that saves round trips. Every decision it makes is
 * re-checked by the claim's conditional UPDATE, so a wrong belief costs at most one useless
 * check, never a second wake and never a lost one.
 */
import type { TransportName } from './vocabulary.js';
import type { BudgetView, CarriedState, RegistrationStateView, TimerReason } from './registration-state.js';
import { budgetLeft, intervalEndsAt, rewakeAt, type WakeHolds, type HeldBack, type Intervals } from './wake-policy.js';

/** What the claim activity reports when it did not claim. */
export interface ObservedState {
  readonly outstanding: boolean;
  readonly hasPending: boolean;
  readonly lastWokenAt: number | null;
}

export interface NextCheck {
  readonly at: number;
  readonly reason: TimerReason | 'now';
}

/**
 * What this run does, by behaviour. Each came with later workflow code behind a patch, and a run
 * begun before it keeps the old behaviour until it continues as new (its history must replay):
 * the workflow reads the run's patch markers once, at its start (workflows/registration.ts
 * `planOfRun`), and a new run has every one without a marker (`beginsUnmarked`).
 */
export interface RunBehaviours {
  /**
   * A `pending` signal while a wake is believed outstanding asks PostgreSQL once, as soon as the
   * interval allows (a lost `drained` must not hold the message for the re-wake); a `pending`
   * signal forgets a held-back answer; a late delivery counts as a wake of its time.
   */
  readonly signalAsksAtInterval: boolean;
  /** A claim that says an outstanding normal wake can be escalated (a DM behind it) is looked at then, not at the re-wake. */
  readonly escalates: boolean;
  /** A `registered` signal forgets a back-off: a new token or endpoint starts without the old one's. */
  readonly registrationEndsBackoff: boolean;
  /**
   * Drains are learned from claims: a `drained` signal is ignored (one that arrives late can no
   * longer cancel a newer wake's re-wake), and a wake believed outstanding is looked at when a
   * signal brings new rows, or at its re-wake.
   */
  readonly drainsLearnedFromClaims: boolean;
  /**
   * The re-wake is one long-lived alarm, armed when none is and re-armed only when it fires
   * before the re-wake it stands for; looks at the interval, a back-off or the budget get short
   * timers of their own. A busy device's cycles then start no re-wake timer each.
   */
  readonly rewakeAlarm: boolean;
}

/** Every behaviour: a run begun by today's workflow. */
export const currentBehaviours: RunBehaviours = {
  signalAsksAtInterval: true,
  escalates: true,
  registrationEndsBackoff: true,
  drainsLearnedFromClaims: true,
  rewakeAlarm: true,
};

/** Which timer serves a planned look: the long-lived re-wake alarm, or a timer of its own. */
export type TimerKind = 'alarm' | 'timer';

export class DeviceState {
  private transport: TransportName;
  /** A wake was sent and the device has not drained since (as far as we know). */
  private outstanding: boolean;
  private lastWokenAt: number | null;
  /** Pending rows existed at the last look (only matters while outstanding: re-wake). */
  private pendingSeen: boolean;
  /** A signal said new pending rows may exist: check once the interval allows. */
  private checkRequested: boolean;
  /** Check existence now: the registration may have been deleted (or a send found it dead). */
  private deletionCheckRequested = false;
  /** Set by a `registered` signal: the registration exists (again), whatever a claim saw. */
  private registered = false;
  /** A `pending` signal came since this look began (its claim, its send). */
  private pendingDuringLook = false;
  private readonly behaviours: RunBehaviours;
  private wakes = 0;
  private intervals: Intervals | undefined;
  /** When the last claim's wake went out, if long after the claim (see `onDelivered`). */
  private deliveredLateAt: number | undefined;
  private control: WakeHolds | undefined;
  /** No claim before this time: the claim said when it could succeed (budget, back-off), or a second against spinning. */
  private notBefore = 0;
  private notBeforeReason: TimerReason = 'interval';
  /** The last look said the outstanding wake can be escalated at this time (before its re-wake). */
  private escalation: { readonly at: number; readonly reason: TimerReason } | undefined;
  /** When the re-wake alarm fires, while one is armed (`rewakeAlarm`). */
  private alarmAt: number | undefined;

  constructor(transport: TransportName, carried: CarriedState | undefined, behaviours: RunBehaviours) {
    this.transport = transport;
    this.behaviours = behaviours;
    this.outstanding = carried?.outstanding ?? false;
    this.lastWokenAt = carried?.lastWakeAt ?? null;
    this.pendingSeen = carried?.outstanding ?? false;
    // A fresh run always looks once: it may have been started to heal a stranded device.
    this.checkRequested = carried?.checkRequested ?? true;
    this.intervals = carried?.intervals;
    this.deliveredLateAt = carried?.wokenAt;
  }

  onPending(): void {
    this.checkRequested = true;
    this.pendingDuringLook = true;
    // New rows may change what the claim allows (a DM may spend the budget's reserve; a
    // recovered outage cleared the back-off): ask instead of waiting out the old answer.
    if (this.behaviours.signalAsksAtInterval) this.notBefore = 0;
  }

  onDrained(): void {
    if (!this.behaviours.drainsLearnedFromClaims) this.outstanding = false;
  }

  onDeleted(): void {
    this.deletionCheckRequested = true;
  }

  onRegistered(transport: TransportName): void {
    this.transport = transport;
    this.registered = true;
    // A new token clears the outstanding flag and the back-off in PostgreSQL: look again (the
    // claim re-checks; the same token keeps its back-off there, and the claim says so).
    this.outstanding = false;
    this.checkRequested = true;
    if (this.behaviours.registrationEndsBackoff) this.notBefore = 0;
  }

  /** Wakes claimed in this run (the workflow continues as new after enough of them). */
  get wakesThisRun(): number {
    return this.wakes;
  }

  /** When the last claim's wake went out, if long after the claim: the claim counts from it. */
  get wokenAt(): number | undefined {
    return this.deliveredLateAt;
  }

  /** A `pending` signal came while this look's claim or send was out (see `onDeferred`). */
  get signalledDuringLook(): boolean {
    return this.pendingDuringLook;
  }

  /** Re-registered since the last claim began: a claim that found no registration looks again. */
  get registeredSinceLastClaim(): boolean {
    return this.registered;
  }

  /** The workflow is about to look at PostgreSQL: that look answers every request made so far. */
  onClaimStarted(): void {
    this.deletionCheckRequested = false;
    this.checkRequested = false;
    this.registered = false;
    this.pendingDuringLook = false;
    this.escalation = undefined;
  }

  /** What every claim answer carries: the intervals and controls in force, the registration's transport. */
  onClaimAnswered(answer: { readonly intervals: Intervals; readonly control?: WakeHolds; readonly transport: TransportName }): void {
    this.intervals = answer.intervals;
    this.control = answer.control;
    this.transport = answer.transport;
  }

  onClaimed(now: number): void {
    this.outstanding = true;
    this.lastWokenAt = now;
    this.deliveredLateAt = undefined;
    this.pendingSeen = true;
    this.wakes += 1;
    this.notBefore = 0;
  }

  /**
   * The claim's wake went out at `at`. Long after the claim (a send retried for minutes while
   * our configuration was broken) it is a wake of `at`: the interval and the re-wake count from
   * it — here and, through the claim's `wokenAt`, in PostgreSQL's eyes — while `lastWokenAt`
   * stays the claim's time, which is what PostgreSQL holds.
   */
  onDelivered(at: number): void {
    if (!this.behaviours.signalAsksAtInterval || this.lastWokenAt === null || this.intervals === undefined) return;
    if (at - this.lastWokenAt > this.intervals.minIntervalMs) this.deliveredLateAt = at;
  }

  /**
   * The send did not go through: the claim was released with a back-off until `until`.
   * `heedSignals` (the workflow asks it when `signalledDuringLook`): a `pending` signal taken
   * while the send was out may come from the end of that very back-off — a recovery that
   * cleared it in PostgreSQL right after the send recorded it — so the next look comes when
   * the interval allows, and its claim says whether the back-off still holds, rather than
   * waiting it out (up to an hour).
   */
  onDeferred(until: number, reason: string, heedSignals = false): void {
    this.outstanding = false;
    this.checkRequested = true;
    this.notBefore = heedSignals ? 0 : until;
    this.notBeforeReason = heedSignals ? 'interval' : 'backoff';
    this.control = { ...this.control, backoff: { until, reason } };
  }

  /**
   * Takes what a claim that did not claim saw. Returns true when PostgreSQL holds an
   * outstanding wake this workflow never recorded claiming: only this workflow claims for its
   * device, so that is its own claim, made in a workflow task whose completion was lost (its
   * worker died, or the Temporal server lost the completion) — the task ran again, and its
   * claim, at the retried task's later time, no longer matched. (Or, after a lost history, a
   * claim of an earlier run.) Whether that claim's wake went out is unknown.
   *
   * `readyAt` is when the claim could succeed (absent in histories of older claims): the one
   * timer to arm.
   */
  onObserved(observed: ObservedState, now: number, readyAt?: number | null, heldBack?: HeldBack): boolean {
    const unrecordedClaim = observed.outstanding && observed.lastWokenAt !== null && observed.lastWokenAt !== this.lastWokenAt;
    if (observed.lastWokenAt !== this.lastWokenAt) this.deliveredLateAt = undefined;
    this.outstanding = observed.outstanding;
    this.lastWokenAt = observed.lastWokenAt;
    this.pendingSeen = observed.hasPending;
    if (!observed.hasPending) return unrecordedClaim;
    this.noteEscalation(observed, readyAt, heldBack);
    if (readyAt !== undefined && readyAt !== null && readyAt > now) {
      // Held back (budget, back-off) or not due yet: one timer, to the time it will be.
      if (!observed.outstanding) this.checkRequested = true;
      this.notBefore = readyAt;
      this.notBeforeReason = heldBack ?? (observed.outstanding ? 'rewake' : 'interval');
    } else if (!observed.outstanding) {
      // Pending and not outstanding, yet not claimed: the interval was not over in PostgreSQL's
      // eyes. Look again when it is — never sooner than a second, so a disagreement cannot spin.
      this.checkRequested = true;
      this.notBefore = now + 1_000;
      this.notBeforeReason = 'interval';
    }
    return unrecordedClaim;
  }

  /** Whether this run escalates an outstanding normal wake for a DM (`escalates`). */
  private get escalates(): boolean {
    return this.behaviours.escalates;
  }

  /** An outstanding wake the claim says can be escalated before its re-wake: look then. */
  private noteEscalation(observed: ObservedState, readyAt: number | null | undefined, heldBack: HeldBack | undefined): void {
    if (!this.escalates || !observed.outstanding || readyAt === undefined || readyAt === null || this.intervals === undefined) return;
    if (readyAt < rewakeAt(this.intervals, this.effectiveLastWake(), readyAt)) this.escalation = { at: readyAt, reason: heldBack ?? 'escalation' };
  }

  /** The last wake as the interval and the re-wake count it: its delivery, when that came long after its claim. */
  private effectiveLastWake(): number | null {
    return this.lastWokenAt === null ? null : Math.max(this.lastWokenAt, this.deliveredLateAt ?? this.lastWokenAt);
  }

  /** Which timer waits for `next`: the re-wake alarm serves re-wakes (`rewakeAlarm`). */
  timerFor(next: NextCheck): TimerKind {
    return this.behaviours.rewakeAlarm && next.reason === 'rewake' ? 'alarm' : 'timer';
  }

  /** An alarm to arm for `next`, if the one armed (if any) would fire after it: none is armed, or it is later. */
  alarmToArm(next: NextCheck): number | undefined {
    return this.alarmAt === undefined || this.alarmAt > next.at ? next.at : undefined;
  }

  onAlarmArmed(at: number): void {
    this.alarmAt = at;
  }

  onAlarmFired(): void {
    this.alarmAt = undefined;
  }

  /**
   * When to run the claim next, or undefined: idle, no timer at all.
   * - an existence check is immediate;
   * - while a wake is outstanding: a signal's new rows once the interval allows (a lost
   *   `drained` heals then, and a DM escalates then), else the escalation the last look
   *   signalled, else the re-wake if something is pending;
   * - otherwise, when asked: as soon as the minimum interval since the last wake, and what the
   *   claim said (budget, back-off), allow.
   */
  nextCheck(now: number): NextCheck | undefined {
    if (this.deletionCheckRequested) return { at: now, reason: 'now' };
    if (this.intervals === undefined) return this.checkRequested ? { at: now, reason: 'now' } : undefined;
    const intervals = this.intervals;
    const lastWake = this.effectiveLastWake();
    if (this.outstanding) {
      if (this.behaviours.signalAsksAtInterval && this.checkRequested)
        return this.notSooner(now, intervalEndsAt(intervals, lastWake, now), 'interval');
      if (this.escalation !== undefined) return this.escalation.at > now ? this.escalation : { at: now, reason: 'now' };
      if (!this.pendingSeen && !this.checkRequested) return undefined;
      const rewake = rewakeAt(intervals, lastWake, now);
      return this.notBefore > rewake ? { at: this.notBefore, reason: this.notBeforeReason } : { at: rewake, reason: 'rewake' };
    }
    if (!this.checkRequested) return undefined;
    return this.notSooner(now, intervalEndsAt(intervals, this.lastWokenAt, now), 'interval');
  }

  private notSooner(now: number, allowed: number, reason: TimerReason): NextCheck {
    const [at, why] = this.notBefore > allowed ? [this.notBefore, this.notBeforeReason] : [allowed, reason];
    return at > now ? { at, reason: why } : { at: now, reason: 'now' };
  }

  carried(): CarriedState {
    return {
      outstanding: this.outstanding,
      lastWakeAt: this.lastWokenAt,
      checkRequested: this.checkRequested || this.deletionCheckRequested,
      intervals: this.intervals,
      ...(this.deliveredLateAt === undefined ? {} : { wokenAt: this.deliveredLateAt }),
    };
  }

  view(userId: string, deviceId: string, now: number): RegistrationStateView {
    const next = this.nextCheck(now);
    return {
      userId,
      deviceId,
      transport: this.transport,
      outstanding: this.outstanding,
      lastWokenAt: this.lastWokenAt === null ? null : new Date(this.lastWokenAt).toISOString(),
      nextTimer: next === undefined || next.reason === 'now' ? null : { at: new Date(next.at).toISOString(), reason: next.reason },
      rewakeAlarm: this.alarmAt === undefined ? null : new Date(this.alarmAt).toISOString(),
      wakesThisRun: this.wakes,
      checkRequested: this.checkRequested,
      budget: this.budgetView(now),
      backoff: this.backoffView(now),
    };
  }

  private budgetView(now: number): BudgetView | null {
    const budget = this.control?.budget;
    if (budget === undefined || this.transport !== 'fcm') return null;
    return {
      burst: budget.burst,
      left: budgetLeft(budget, budget.tat, now, 'high'),
      leftForServerChannels: budgetLeft(budget, budget.tat, now, 'normal'),
      refillMs: budget.refillMs,
      dmReserve: budget.dmReserve,
    };
  }

  private backoffView(now: number): { readonly until: string; readonly reason: string | null } | null {
    const backoff = this.control?.backoff;
    return backoff === undefined || backoff.until <= now ? null : { until: new Date(backoff.until).toISOString(), reason: backoff.reason };
  }

  /** One line for the Temporal Web UI. */
  details(now: number): string {
    const next = this.nextCheck(now);
    const last = this.lastWokenAt === null ? 'never woken' : `last wake ${new Date(this.lastWokenAt).toISOString()}`;
    const wakes = `${this.wakes} wake(s) this run`;
    if (next === undefined) return `${this.transport}: idle, no timer (${last}; ${wakes})`;
    const when = new Date(next.at).toISOString();
    const budget = this.budgetView(now);
    const left = budget === null ? '' : `; FCM budget ${budget.left}/${budget.burst}`;
    if (next.reason === 'rewake') return `${this.transport}: wake outstanding, re-wake at ${when} if still undrained (${last}; ${wakes}${left})`;
    if (next.reason === 'interval') return `${this.transport}: pending, next wake at ${when} (minimum interval) (${last}; ${wakes}${left})`;
    if (next.reason === 'escalation')
      return `${this.transport}: a DM behind the outstanding server-channel wake, high-priority wake at ${when} (${last}; ${wakes}${left})`;
    if (next.reason === 'budget') return `${this.transport}: pending, held back by the FCM budget until ${when} (${last}; ${wakes}${left})`;
    if (next.reason === 'backoff')
      return `${this.transport}: pending, backing off until ${when}: ${this.control?.backoff?.reason ?? 'back-off'} (${last}; ${wakes}${left})`;
    return `${this.transport}: checking now (${last}; ${wakes}${left})`;
  }
}

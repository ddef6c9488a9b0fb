/**
 * The coalescing state of one device, as its workflow believes it, and the one rule that
 * decides when to look at PostgreSQL next (design §4). Pure and deterministic: no I/O, no
 * clock — callers pass the workflow time in.
 *
 * PostgreSQL is the truth; this is a cache that saves round trips. Every decision it makes is
 * re-checked by the claim's conditional UPDATE, so a wrong belief costs at most one useless
 * check, never a second wake and never a lost one.
 */
import type { CarriedState, RegistrationStateView, TimerReason, Transport } from './registration-messages.js';

export interface Intervals {
  readonly minIntervalMs: number;
  readonly rewakeAfterMs: number;
}

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

export class DeviceState {
  transport: Transport;
  /** A wake was sent and the device has not drained since (as far as we know). */
  outstanding: boolean;
  lastWakeAt: number | null;
  /** Pending rows existed at the last look (only matters while outstanding: re-wake). */
  pendingSeen: boolean;
  /** A signal said new pending rows may exist: check once the interval allows. */
  checkRequested: boolean;
  /** Check existence now: the registration may have been deleted (or a send found it dead). */
  existenceCheckRequested = false;
  /** Set by a `registered` signal: the registration exists (again), whatever a claim saw. */
  registeredSinceLastClaim = false;
  wakesThisRun = 0;
  intervals: Intervals | undefined;
  /** No claim before this time (see onObserved). */
  private notBefore = 0;

  constructor(transport: Transport, carried: CarriedState | undefined) {
    this.transport = transport;
    this.outstanding = carried?.outstanding ?? false;
    this.lastWakeAt = carried?.lastWakeAt ?? null;
    this.pendingSeen = carried?.outstanding ?? false;
    // A fresh run always looks once: it may have been started to heal a stranded device.
    this.checkRequested = carried?.checkRequested ?? true;
    this.intervals = carried?.intervals;
  }

  onPending(): void {
    this.checkRequested = true;
  }

  onDrained(): void {
    this.outstanding = false;
  }

  onStop(): void {
    this.existenceCheckRequested = true;
  }

  onRegistered(transport: Transport): void {
    this.transport = transport;
    this.registeredSinceLastClaim = true;
    // A new token clears the outstanding flag in PostgreSQL: look again (the claim re-checks).
    this.outstanding = false;
    this.checkRequested = true;
  }

  onClaimed(now: number): void {
    this.outstanding = true;
    this.lastWakeAt = now;
    this.pendingSeen = true;
    this.wakesThisRun += 1;
  }

  /**
   * Takes what a claim that did not claim saw. Returns true when PostgreSQL holds an
   * outstanding wake this workflow never recorded claiming: only this workflow claims for its
   * device, so that is its own claim, made in a workflow task whose completion was lost (its
   * worker died, or the Temporal server lost the completion) — the task ran again, and its
   * claim, at the retried task's later time, no longer matched. (Or, after a lost history, a
   * claim of an earlier run.) Whether that claim's wake went out is unknown.
   */
  onObserved(observed: ObservedState, now: number): boolean {
    const unrecordedClaim = observed.outstanding && observed.lastWokenAt !== null && observed.lastWokenAt !== this.lastWakeAt;
    this.outstanding = observed.outstanding;
    this.lastWakeAt = observed.lastWokenAt;
    this.pendingSeen = observed.hasPending;
    // Pending and not outstanding, yet not claimed: the interval was not over in PostgreSQL's
    // eyes. Look again when it is — never sooner than a second, so a disagreement cannot spin.
    if (observed.hasPending && !observed.outstanding) {
      this.checkRequested = true;
      this.notBefore = now + 1_000;
    }
    return unrecordedClaim;
  }

  /**
   * When to run the claim next, or undefined: idle, no timer at all.
   * - an existence check is immediate;
   * - while a wake is outstanding: the re-wake, if something is pending;
   * - otherwise, when asked: as soon as the minimum interval since the last wake allows.
   */
  nextCheck(now: number): NextCheck | undefined {
    if (this.existenceCheckRequested) return { at: now, reason: 'now' };
    if (this.intervals === undefined) return this.checkRequested ? { at: now, reason: 'now' } : undefined;
    const { minIntervalMs, rewakeAfterMs } = this.intervals;
    if (this.outstanding) {
      if (!this.pendingSeen && !this.checkRequested) return undefined;
      return { at: (this.lastWakeAt ?? now) + rewakeAfterMs, reason: 'rewake' };
    }
    if (!this.checkRequested) return undefined;
    const allowed = Math.max(this.lastWakeAt === null ? now : this.lastWakeAt + minIntervalMs, this.notBefore);
    return allowed > now ? { at: allowed, reason: 'interval' } : { at: now, reason: 'now' };
  }

  carried(): CarriedState {
    return {
      outstanding: this.outstanding,
      lastWakeAt: this.lastWakeAt,
      checkRequested: this.checkRequested || this.existenceCheckRequested,
      intervals: this.intervals,
    };
  }

  view(userId: string, deviceId: string, now: number): RegistrationStateView {
    const next = this.nextCheck(now);
    return {
      userId,
      deviceId,
      transport: this.transport,
      outstanding: this.outstanding,
      lastWakeAt: this.lastWakeAt === null ? null : new Date(this.lastWakeAt).toISOString(),
      nextTimer: next === undefined || next.reason === 'now' ? null : { at: new Date(next.at).toISOString(), reason: next.reason },
      wakesThisRun: this.wakesThisRun,
      checkRequested: this.checkRequested,
    };
  }

  /** One line for the Temporal Web UI. */
  details(now: number): string {
    const next = this.nextCheck(now);
    const last = this.lastWakeAt === null ? 'never woken' : `last wake ${new Date(this.lastWakeAt).toISOString()}`;
    const wakes = `${this.wakesThisRun} wake(s) this run`;
    if (next === undefined) return `${this.transport}: idle, no timer (${last}; ${wakes})`;
    const when = new Date(next.at).toISOString();
    if (next.reason === 'rewake') return `${this.transport}: wake outstanding, re-wake at ${when} if still undrained (${last}; ${wakes})`;
    if (next.reason === 'interval') return `${this.transport}: pending, next wake at ${when} (minimum interval) (${last}; ${wakes})`;
    return `${this.transport}: checking now (${last}; ${wakes})`;
  }
}

/**
 * The faults tier's verdict (test/faults/verdict.ts) on hand-made timelines: it must fail a
 * lost claim, an unexplained re-send, a re-wake after a drain, claims too close together and a
 * miscount — or the fault tests could not fail.
 */
import { describe, expect, it } from 'vitest';
import type { AuditLog, ClaimEntry } from '../../faults/audit.js';
import type { DrainAttempt, Phone } from '../../faults/phones.js';
import { judge, type VerdictInput } from '../../faults/verdict.js';

const M = 2_000;
const R = 6_000;
const t = 1_000_000;

function phone(wakes: number[], drains: DrainAttempt[][], received = 1): Phone {
  return {
    userId: 'u1',
    deviceId: 'phone-u1',
    jwt: '',
    keys: undefined as never,
    endpoint: '',
    wakes,
    drains,
    received: new Map([['c1', received]]),
    idle: () => true,
  };
}
const ok = (start: number, count = 1): DrainAttempt => ({
  start,
  end: start + 20,
  api: 'a',
  outcome: 'ok',
  status: 200,
  items: count === 0 ? [] : [item(count)],
});
const item = (count: number) => ({
  channel_id: 'c1',
  server_id: 's',
  is_dm: false,
  message_count: count,
  first_message_id: '1',
  first_at: '',
  last_message_id: '1',
});
const claim = (at: number, previous: number | null = null, rewake = false): ClaimEntry => ({
  registrationId: 'r1',
  at,
  now: at,
  previous,
  rewake,
  escalation: false,
});
/** A HIGH claim made while the NORMAL wake claimed at `previous` was outstanding. */
const escalation = (at: number, previous: number): ClaimEntry => ({ ...claim(at, previous), escalation: true });

function verdict(p: Phone, claims: ClaimEntry[], options: { drains?: number[]; drained?: number; taskLossesAt?: number[]; expected?: number } = {}) {
  const audit: AuditLog = {
    claims,
    drains: (options.drains ?? []).map((at) => ({ registrationId: 'r1', at })),
    drainedMessages: new Map([['r1', options.drained ?? 1]]),
  };
  const input: VerdictInput = {
    phones: [p],
    registrationOf: new Map([['u1', 'r1']]),
    audit,
    expected: new Map([['u1', new Map([['c1', options.expected ?? 1]])]]),
    taskLossesAt: options.taskLossesAt ?? [],
    minIntervalMs: M,
    rewakeAfterMs: R,
  };
  return judge(input);
}

describe('fault verdict', () => {
  it('passes one claim, one wake, one drain', () => {
    const v = verdict(phone([t + 10], [[ok(t + 12)]]), [claim(t)], { drains: [t + 15] });
    expect(v.violations).toEqual([]);
    expect(v).toMatchObject({ wakes: 1, claims: 1, resends: 0, rewakeDuplicates: 0 });
  });

  it('passes an escalation at the minimum interval, and the NORMAL claim it superseded before its wake went out', () => {
    // The NORMAL claim's task was lost before its POST; the retried task found the DM's escalation due.
    const v = verdict(phone([t + M + 10], [[ok(t + M + 12)]]), [claim(t), escalation(t + M, t)], { drains: [t + M + 15], taskLossesAt: [t + 5] });
    expect(v.violations).toEqual([]);
    expect(v).toMatchObject({ claims: 2, resends: 0, rewakeDuplicates: 0 });
  });

  it('fails an escalation sooner than the minimum interval, and a lost claim no escalation delivered', () => {
    const tooSoon = verdict(phone([t + 10, t + 510], [[ok(t + 512)]]), [claim(t), escalation(t + 500, t)], { drains: [t + 515] });
    expect(tooSoon.violations.join()).toContain('claimed 500 ms after the previous claim (needs 2000)');
    const lost = verdict(phone([], []), [claim(t), escalation(t + M, t)], { drained: 0, expected: 0 });
    expect(lost.violations.join()).toContain('never reached the distributor');
  });

  it('fails a claim whose wake never arrived', () => {
    const v = verdict(phone([t + 20_010], [[ok(t + 20_012)]]), [claim(t), claim(t + 20_000, t, true)], { drains: [t + 20_015] });
    expect(v.violations.join()).toContain('never reached the distributor');
  });

  it('allows a re-send after a lost workflow task of an undrained claim, and fails one without', () => {
    const wakes = [t + 10, t + 10_500];
    const drains = [[ok(t + 10_600)], [ok(t + 10_700, 0)]];
    expect(verdict(phone(wakes, drains), [claim(t)], { drains: [t + 10_650], taskLossesAt: [t + 50] })).toMatchObject({
      resends: 1,
      resendBound: 1,
      violations: [],
    });
    expect(verdict(phone(wakes, drains), [claim(t)], { drains: [t + 10_650] }).violations.join()).toContain('after 0 lost workflow task');
  });

  it('fails a re-send of a claim the phone had drained', () => {
    const v = verdict(phone([t + 10, t + 10_500], [[ok(t + 12)], [ok(t + 10_600, 0)]]), [claim(t)], { drains: [t + 15], taskLossesAt: [t + 50] });
    expect(v.violations.join()).toContain('after a drain');
  });

  it('counts a re-wake of an undrained wake within the bound, and fails one after the drain', () => {
    const undrained = phone([t + 10, t + 6_010], [[ok(t + 7_000)], [ok(t + 7_100, 0)]]);
    expect(verdict(undrained, [claim(t), claim(t + 6_000, t, true)], { drains: [t + 7_010] })).toMatchObject({
      rewakeDuplicates: 1,
      rewakeBound: 1,
      violations: [],
    });
    const drained = phone([t + 10, t + 6_010], [[ok(t + 12)], [ok(t + 6_012, 0)]]);
    expect(verdict(drained, [claim(t), claim(t + 6_000, t, true)], { drains: [t + 15] }).violations.join()).toContain('after the phone');
  });

  it('fails claims closer than the minimum interval, and re-wakes closer than R', () => {
    expect(
      verdict(phone([t + 10, t + 1_010], [[ok(t + 12)], [ok(t + 1_012)]], 2), [claim(t), claim(t + 1_000, t)], {
        drained: 2,
        expected: 2,
      }).violations.join(),
    ).toContain('claimed 1000 ms after the previous claim (needs 2000)');
    expect(
      verdict(phone([t + 10, t + 3_010], [[ok(t + 4_000)], [ok(t + 4_100, 0)]]), [claim(t), claim(t + 3_000, t, true)]).violations.join(),
    ).toContain('needs 6000');
  });

  it('fails a message drained but not published, or published but not returned', () => {
    expect(verdict(phone([t + 10], [[ok(t + 12)]]), [claim(t)], { drained: 2 }).violations.join()).toContain(
      '1 messages published for it, 2 drained',
    );
    expect(verdict(phone([t + 10], [[ok(t + 12, 0)]], 0), [claim(t)]).violations.join()).toContain('drains returned 0');
  });
});

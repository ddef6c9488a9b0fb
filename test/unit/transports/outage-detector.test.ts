/**
 * The outage detector's rules (docs/transports.md, "Whose failure is it"), on a clock the test
 * moves: what counts toward the ten, when an origin is in outage, how sends are held back and
 * probed, when the outage ends, and how replicas see each other's windows.
 */
import { describe, expect, it } from 'vitest';
import { createOutageDetector, originKey, type OriginKey } from '../../../src/transports/outage-detector.js';

const ntfy = originKey('unifiedpush', 'https://ntfy.example');
const other = originKey('unifiedpush', 'https://up.other.example');
const fcm = originKey('fcm', 'https://fcm.googleapis.com');
const t0 = Date.parse('2026-12-01T12:00:00Z');

function detector(options: Parameters<typeof createOutageDetector>[0] = {}) {
  const events: string[] = [];
  const d = createOutageDetector({
    ...options,
    onEnter: (key) => events.push(`enter ${key}`),
    onExit: (key, why) => events.push(`exit ${key} ${why}`),
  });
  return { d, events };
}

describe('one endpoint failing on a healthy origin', () => {
  it('counts every failure and never calls it an outage', () => {
    const { d, events } = detector();
    for (let i = 0; i < 10; i++) {
      const now = t0 + i * 20_000;
      d.record(ntfy, 'healthy-1', true, now);
      d.record(ntfy, 'healthy-2', true, now);
      d.record(ntfy, 'dead', false, now + 1);
      expect(d.counts(ntfy, 'dead', 'endpoint', now + 1)).toBe(true);
      expect(d.admit(ntfy, 'dead', now + 2)).toBe(true);
    }
    expect(events).toEqual([]);
  });

  it('counts an unanswered send (refused, timeout) only when another registration was delivered lately, anywhere', () => {
    const { d } = detector();
    d.record(ntfy, 'alone', false, t0);
    expect(d.counts(ntfy, 'alone', 'network', t0)).toBe(false); // our network may be down
    d.record(other, 'elsewhere', true, t0 + 1_000);
    d.record(ntfy, 'alone', false, t0 + 2_000);
    expect(d.counts(ntfy, 'alone', 'network', t0 + 2_000)).toBe(true);
    // Its own past deliveries prove nothing about our network now.
    const { d: d2 } = detector();
    d2.record(ntfy, 'alone', true, t0);
    d2.record(ntfy, 'alone', false, t0 + 1_000);
    expect(d2.counts(ntfy, 'alone', 'network', t0 + 1_000)).toBe(false);
    // Evidence goes stale.
    d.record(ntfy, 'alone', false, t0 + 20 * 60_000);
    expect(d.counts(ntfy, 'alone', 'network', t0 + 20 * 60_000)).toBe(false);
  });

  it('never counts a failure before the request left (OAuth) or a bug of ours', () => {
    const { d } = detector();
    d.record(fcm, 'a', true, t0);
    expect(d.counts(originKey('fcm-oauth', 'https://oauth2.googleapis.com'), 'b', 'token-endpoint', t0)).toBe(false);
    expect(d.counts(ntfy, 'b', 'internal', t0)).toBe(false);
  });
});

describe('FCM', () => {
  it('counts an answer about a token only while FCM delivers to other tokens; never a network failure', () => {
    const { d } = detector();
    d.record(fcm, 'token-a', false, t0);
    expect(d.counts(fcm, 'token-a', 'endpoint', t0)).toBe(false); // no evidence FCM works at all
    d.record(fcm, 'token-b', true, t0 + 1_000);
    d.record(fcm, 'token-a', false, t0 + 2_000);
    expect(d.counts(fcm, 'token-a', 'endpoint', t0 + 2_000)).toBe(true);
    expect(d.counts(fcm, 'token-a', 'network', t0 + 2_000)).toBe(false);
  });
});

describe('the share of the recently active registrations', () => {
  it('two dead endpoints on a busy origin are two dead endpoints: counted, never an outage', () => {
    const { d, events } = detector();
    for (let i = 0; i < 20; i++) d.record(ntfy, `user-${i}`, true, t0 + i * 10_000);
    for (let round = 0; round < 10; round++) {
      const now = t0 + 200_000 + round * 30_000;
      for (const dead of ['dead-1', 'dead-2']) {
        d.record(ntfy, dead, false, now);
        expect(d.counts(ntfy, dead, 'endpoint', now)).toBe(true);
      }
      d.record(ntfy, `user-${round}`, true, now + 1);
    }
    expect(events).toEqual([]);
  });

  it('two dead endpoints on a quiet origin are under the floor: counted, never an outage', () => {
    const { d, events } = detector();
    d.record(ntfy, 'dead-1', false, t0);
    d.record(ntfy, 'dead-2', false, t0 + 100);
    expect(d.inOutage(ntfy)).toBe(false);
    expect(d.counts(ntfy, 'dead-2', 'endpoint', t0 + 100)).toBe(true);
    expect(d.admit(ntfy, 'friend', t0 + 200)).toBe(true);
    expect(events).toEqual([]);
  });

  it('is an outage from three failing and half of the active registrations', () => {
    const { d } = detector();
    for (let i = 0; i < 4; i++) d.record(ntfy, `ok-${i}`, true, t0 + i);
    for (let i = 0; i < 3; i++) d.record(ntfy, `bad-${i}`, false, t0 + 1_000 + i);
    expect(d.inOutage(ntfy)).toBe(false); // 3 of 7
    d.record(ntfy, 'bad-3', false, t0 + 2_000);
    expect(d.inOutage(ntfy)).toBe(true); // 4 of 8
  });

  it('forgets registrations not active within the window (5 minutes)', () => {
    const { d } = detector();
    for (let i = 0; i < 10; i++) d.record(ntfy, `ok-${i}`, true, t0);
    for (let i = 0; i < 3; i++) d.record(ntfy, `bad-${i}`, false, t0 + 4 * 60_000);
    expect(d.inOutage(ntfy)).toBe(false);
    d.record(ntfy, 'bad-0', false, t0 + 5 * 60_000 + 1);
    expect(d.inOutage(ntfy)).toBe(true);
  });
});

describe('an origin in outage', () => {
  function outage() {
    const t = detector({ probeEveryMs: 5_000 });
    t.d.record(ntfy, 'healthy', true, t0);
    t.d.record(ntfy, 'a', false, t0 + 100);
    t.d.record(ntfy, 'b', false, t0 + 150);
    expect(t.d.inOutage(ntfy)).toBe(false);
    t.d.record(ntfy, 'c', false, t0 + 200, 30_000);
    expect(t.d.inOutage(ntfy)).toBe(true);
    return t;
  }

  it('starts when at least three registrations fail, half of those recently active', () => {
    const { d, events } = outage();
    expect(events).toEqual([`enter ${ntfy}`]);
    expect(d.outages()).toEqual([ntfy]);
    expect(d.counts(ntfy, 'b', 'endpoint', t0 + 200)).toBe(false);
    expect(d.inOutage(other)).toBe(false);
  });

  it('gives the probe to a registration that delivered recently, holds the rest back, with the Retry-After it heard', () => {
    const { d } = outage(); // found at t0 + 200
    expect(d.admit(ntfy, 'healthy', t0 + 5_199)).toBe(false);
    expect(d.admit(ntfy, 'a', t0 + 5_200)).toBe(false); // a dead endpoint: someone better may come
    expect(d.admit(ntfy, 'healthy', t0 + 5_201)).toBe(true);
    expect(d.admit(ntfy, 'healthy', t0 + 5_202)).toBe(false);
    expect(d.admit(ntfy, 'healthy', t0 + 10_200)).toBe(false);
    expect(d.admit(ntfy, 'healthy', t0 + 10_201)).toBe(true);
    expect(d.admit(other, 'x', t0 + 10_202)).toBe(true);
    expect(d.deliveredRecently(ntfy, t0 + 10_202)).toEqual(['healthy']);
    // Nobody who delivered tried for six probe intervals: anyone may probe.
    expect(d.admit(ntfy, 'a', t0 + 10_201 + 29_999)).toBe(false);
    expect(d.admit(ntfy, 'a', t0 + 10_201 + 30_000)).toBe(true);
    expect(d.retryAfterHint(ntfy, t0 + 10_200)).toBe(20_000);
  });

  it('ends when two probes of distinct registrations are delivered in a row, and forgets its failures', () => {
    const { d, events } = outage();
    d.record(ntfy, 'a', false, t0 + 5_000);
    d.record(ntfy, 'd', true, t0 + 10_000);
    expect(d.inOutage(ntfy)).toBe(true); // one success among failures: not yet
    d.record(ntfy, 'd', true, t0 + 15_000);
    expect(d.inOutage(ntfy)).toBe(true); // the same registration twice proves less
    d.record(ntfy, 'e', true, t0 + 20_000);
    expect(d.inOutage(ntfy)).toBe(false);
    expect(events).toEqual([`enter ${ntfy}`, `exit ${ntfy} recovered`]);
    // A failure right after is judged afresh, not with the outage's.
    d.record(ntfy, 'a', false, t0 + 21_000);
    expect(d.inOutage(ntfy)).toBe(false);
    expect(d.counts(ntfy, 'a', 'endpoint', t0 + 21_000)).toBe(true);
  });

  it('once a probe is delivered, admits the next send of another registration at once to confirm the end', () => {
    const { d } = outage(); // found at t0 + 200
    expect(d.admit(ntfy, 'healthy', t0 + 5_201)).toBe(true);
    expect(d.confirming(ntfy)).toBeUndefined();
    d.record(ntfy, 'healthy', true, t0 + 5_300);
    expect(d.confirming(ntfy)).toBe('healthy');
    // The same registration again proves nothing more: the probe interval holds for it.
    expect(d.admit(ntfy, 'healthy', t0 + 5_400)).toBe(false);
    // Another one goes at once, and only one.
    expect(d.admit(ntfy, 'a', t0 + 5_500)).toBe(true);
    expect(d.confirming(ntfy)).toBeUndefined();
    expect(d.admit(ntfy, 'b', t0 + 5_600)).toBe(false);
    d.record(ntfy, 'a', true, t0 + 5_700);
    expect(d.inOutage(ntfy)).toBe(false);
  });

  it('after a confirming probe that failed, probes as before', () => {
    const { d } = outage();
    expect(d.admit(ntfy, 'healthy', t0 + 5_201)).toBe(true);
    d.record(ntfy, 'healthy', true, t0 + 5_300);
    expect(d.admit(ntfy, 'a', t0 + 5_500)).toBe(true);
    d.record(ntfy, 'a', false, t0 + 5_600);
    expect(d.inOutage(ntfy)).toBe(true);
    expect(d.confirming(ntfy)).toBeUndefined();
    expect(d.admit(ntfy, 'b', t0 + 5_700)).toBe(false);
    expect(d.admit(ntfy, 'healthy', t0 + 10_500)).toBe(true);
  });

  it('ends quietly when nothing at all was tried for a long while', () => {
    const { d, events } = outage();
    d.tick(t0 + 5 * 60_000);
    expect(d.inOutage(ntfy)).toBe(true);
    d.tick(t0 + 11 * 60_000);
    expect(events).toEqual([`enter ${ntfy}`, `exit ${ntfy} quiet`]);
  });
});

describe('the same failure across many origins', () => {
  const origin = (i: number) => originKey('unifiedpush', `https://self-${i}.example`);

  it('is ours: it counts against nobody, and is told once', () => {
    const shared: string[] = [];
    const d = createOutageDetector({ onShared: (signature, origins) => shared.push(`${signature} ${origins}`) });
    d.record(ntfy, 'busy', true, t0);
    for (let i = 0; i < 4; i++) {
      d.record(origin(i), `alone-${i}`, false, t0 + 1_000 + i, undefined, 'UnifiedPush 401/403');
      const counted = d.counts(origin(i), `alone-${i}`, 'endpoint', t0 + 1_000 + i);
      expect(counted).toBe(i < 2); // the third origin answering alike makes it ours
    }
    expect(shared).toEqual(['UnifiedPush 401/403 3']);
  });

  it('is not ours while few of the active origins answer it', () => {
    const d = createOutageDetector();
    for (let i = 0; i < 10; i++) d.record(origin(100 + i), `fine-${i}`, true, t0);
    for (let i = 0; i < 3; i++) d.record(origin(i), `dead-${i}`, false, t0 + 1_000, undefined, 'UnifiedPush 503');
    expect(d.counts(origin(2), 'dead-2', 'endpoint', t0 + 1_000)).toBe(true);
  });
});

describe('replicas', () => {
  it("judge an origin on every worker's window", () => {
    const a = detector();
    const b = detector();
    a.d.record(ntfy, 'x', false, t0);
    a.d.record(ntfy, 'x2', false, t0);
    b.d.record(ntfy, 'y', false, t0);
    b.d.record(ntfy, 'y2', false, t0);
    expect(a.d.inOutage(ntfy) || b.d.inOutage(ntfy)).toBe(false); // two failing registrations each
    const share = (from: typeof a, to: typeof b) => to.d.setRemote(new Map([...from.d.summaries(t0)] as Array<[OriginKey, never]>), t0);
    share(a, b);
    share(b, a);
    expect(a.d.inOutage(ntfy)).toBe(true);
    expect(b.d.inOutage(ntfy)).toBe(true);
  });

  it('shares only what matters: failing origins, FCM, outages, and the latest delivery anywhere', () => {
    const { d } = detector();
    d.record(other, 'fine', true, t0);
    d.record(ntfy, 'bad', false, t0);
    d.record(fcm, 'tok', true, t0);
    expect([...d.summaries(t0).keys()].sort()).toEqual(['*', fcm, ntfy].sort());
  });
});

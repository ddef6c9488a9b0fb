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
      expect(d.admit(ntfy, now + 2)).toBe(true);
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

describe('an origin in outage', () => {
  function outage() {
    const t = detector({ probeEveryMs: 5_000 });
    t.d.record(ntfy, 'healthy', true, t0);
    t.d.record(ntfy, 'a', false, t0 + 100);
    expect(t.d.inOutage(ntfy)).toBe(false);
    t.d.record(ntfy, 'b', false, t0 + 200, 30_000);
    expect(t.d.inOutage(ntfy)).toBe(true);
    return t;
  }

  it('starts when at least two registrations fail and they outnumber the deliveries', () => {
    const { d, events } = outage();
    expect(events).toEqual([`enter ${ntfy}`]);
    expect(d.outages()).toEqual([ntfy]);
    expect(d.counts(ntfy, 'b', 'endpoint', t0 + 200)).toBe(false);
    expect(d.inOutage(other)).toBe(false);
  });

  it('lets one probe through per interval and holds the rest back, with the Retry-After it heard', () => {
    const { d } = outage();
    expect(d.admit(ntfy, t0 + 1_000)).toBe(true);
    expect(d.admit(ntfy, t0 + 1_001)).toBe(false);
    expect(d.admit(ntfy, t0 + 5_999)).toBe(false);
    expect(d.admit(ntfy, t0 + 6_000)).toBe(true);
    expect(d.admit(other, t0 + 6_001)).toBe(true);
    expect(d.retryAfterHint(ntfy, t0 + 10_200)).toBe(20_000);
  });

  it('ends when two probes of distinct registrations are delivered in a row', () => {
    const { d, events } = outage();
    d.record(ntfy, 'a', false, t0 + 5_000);
    d.record(ntfy, 'c', true, t0 + 10_000);
    expect(d.inOutage(ntfy)).toBe(true); // one success among failures: not yet
    d.record(ntfy, 'c', true, t0 + 15_000);
    expect(d.inOutage(ntfy)).toBe(true); // the same registration twice proves less
    d.record(ntfy, 'd', true, t0 + 20_000);
    expect(d.inOutage(ntfy)).toBe(false);
    expect(events).toEqual([`enter ${ntfy}`, `exit ${ntfy} recovered`]);
  });

  it('ends quietly when nothing at all was tried for a long while', () => {
    const { d, events } = outage();
    d.tick(t0 + 5 * 60_000);
    expect(d.inOutage(ntfy)).toBe(true);
    d.tick(t0 + 11 * 60_000);
    expect(events).toEqual([`enter ${ntfy}`, `exit ${ntfy} quiet`]);
  });
});

describe('replicas', () => {
  it("judge an origin on every worker's window", () => {
    const a = detector();
    const b = detector();
    a.d.record(ntfy, 'x', false, t0);
    b.d.record(ntfy, 'y', false, t0);
    expect(a.d.inOutage(ntfy) || b.d.inOutage(ntfy)).toBe(false); // one failing registration each
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

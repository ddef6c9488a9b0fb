import { describe, expect, it } from 'vitest';
import { createPruneBreaker, type BreakerOptions } from '../../../src/transports/breaker.js';

function breaker(options: Partial<BreakerOptions> = {}) {
  let now = 0;
  const events: string[] = [];
  const b = createPruneBreaker({
    floor: 3,
    share: 0.01,
    windowMs: 60_000,
    ...options,
    now: () => now,
    onOpen: (users, threshold) => events.push(`open ${users} > ${threshold}`),
    onClose: () => events.push('close'),
  });
  /** One send to `userId`'s registration `id` that FCM answers with a token-related 400/403. */
  const answered = (id: string, userId = `user-${id}`) => {
    const done = b.sending({ id, userId });
    try {
      return b.record(id);
    } finally {
      done();
    }
  };
  /** `count` sends that FCM delivers. */
  const delivered = (count: number) => {
    for (let i = 0; i < count; i++) b.sending({ id: `ok-${i}`, userId: `ok-user-${i}` })();
  };
  return { b, events, answered, delivered, advance: (ms: number) => (now += ms) };
}

describe('prune breaker', () => {
  it('allows pruning up to the floor of distinct users, then opens once', () => {
    const { b, events, answered } = breaker();
    expect(['a', 'b', 'c'].map((id) => answered(id))).toEqual([true, true, true]);
    expect(answered('d')).toBe(false);
    expect(answered('e')).toBe(false);
    expect(b.isOpen()).toBe(true);
    expect(events).toEqual(['open 4 > 3']);
  });

  it('counts a registration once however often it answers', () => {
    const { b, answered } = breaker();
    for (let i = 0; i < 10; i++) expect(answered('same')).toBe(true);
    expect(b.isOpen()).toBe(false);
  });

  it('counts a user once however many registrations they have: one account cannot open it', () => {
    const { b, answered } = breaker();
    // 21 garbage registrations of one account, each answered INVALID_ARGUMENT, all pruned.
    for (let i = 0; i < 21; i++) expect(answered(`garbage-${i}`, 'mallory')).toBe(true);
    expect(b.isOpen()).toBe(false);
    // Two more users stay within the floor of 3.
    expect([answered('x'), answered('y')]).toEqual([true, true]);
    expect(answered('z')).toBe(false);
  });

  it('follows the volume of sends: a share of the window’s sends, never less than the floor', () => {
    const { b, answered, delivered } = breaker({ floor: 3, share: 0.01 });
    delivered(989); // with the 11 answered below, 1,000 sends: 1 % is 10 users
    for (let i = 0; i < 10; i++) expect(answered(`dead-${i}`)).toBe(true);
    expect(b.isOpen()).toBe(false);
    expect(answered('dead-10')).toBe(false);
  });

  it('a busy worker prunes tokens that die on their own; the same deaths on a quiet one open it', () => {
    // A fixed 20 per 10 minutes would open on a million-device instance's natural token deaths.
    const busy = breaker({ floor: 20, share: 0.01, windowMs: 600_000 });
    const quiet = breaker({ floor: 20, share: 0.01, windowMs: 600_000 });
    busy.delivered(10_000);
    quiet.delivered(100);
    const outcomes = (w: typeof busy) => Array.from({ length: 50 }, (_, i) => w.answered(`expired-${i}`));
    expect(outcomes(busy).every(Boolean)).toBe(true);
    expect(outcomes(quiet).filter((allowed) => !allowed)).toHaveLength(30);
  });

  it('forgets sends older than the window: the threshold falls back with the volume', () => {
    const { b, answered, delivered, advance } = breaker({ floor: 3, share: 0.01 });
    delivered(1_000);
    advance(60_001);
    for (const id of ['a', 'b', 'c']) expect(answered(id)).toBe(true);
    expect(answered('d')).toBe(false);
    expect(b.isOpen()).toBe(true);
  });

  it('forgets answers older than the window', () => {
    const { answered, advance } = breaker();
    answered('a');
    answered('b');
    answered('c');
    advance(60_001);
    expect(answered('d')).toBe(true); // a, b, c are out of the window
  });

  it('counts an answer to a send it was not told of as its own user', () => {
    const { b } = breaker({ floor: 1 });
    expect(b.record('r1')).toBe(true);
    expect(b.record('r2')).toBe(false);
  });

  it('closes once the window holds no more than half the threshold, with no new answers needed', () => {
    const { b, events, answered, advance } = breaker({ floor: 4 });
    for (const id of ['a', 'b', 'c']) answered(id);
    advance(30_000);
    for (const id of ['d', 'e']) answered(id);
    expect(b.isOpen()).toBe(true);
    advance(30_001); // a, b, c expire; d and e remain: 2 ≤ 4/2
    expect(b.isOpen()).toBe(false);
    expect(events).toEqual(['open 5 > 4', 'close']);
    expect(answered('f')).toBe(true);
  });

  it('stays open while answers keep coming above the closing level', () => {
    const { answered, advance } = breaker({ floor: 2, windowMs: 10_000 });
    for (const id of ['a', 'b', 'c']) answered(id);
    for (let i = 0; i < 5; i++) {
      advance(5_000);
      expect(answered(`x${i}`)).toBe(false);
      expect(answered(`y${i}`)).toBe(false);
    }
  });
});

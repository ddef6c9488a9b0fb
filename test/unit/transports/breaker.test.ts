import { describe, expect, it } from 'vitest';
import { createPruneBreaker } from '../../../src/transports/breaker.js';

function breaker(threshold = 3, windowMs = 60_000) {
  let now = 0;
  const events: string[] = [];
  const b = createPruneBreaker({
    threshold,
    windowMs,
    now: () => now,
    onOpen: (count) => events.push(`open ${count}`),
    onClose: () => events.push('close'),
  });
  return { b, events, advance: (ms: number) => (now += ms) };
}

describe('prune breaker', () => {
  it('allows pruning up to the threshold of distinct registrations, then opens once', () => {
    const { b, events } = breaker();
    expect(['a', 'b', 'c'].map((id) => b.record(id))).toEqual([true, true, true]);
    expect(b.record('d')).toBe(false);
    expect(b.record('e')).toBe(false);
    expect(b.isOpen()).toBe(true);
    expect(events).toEqual(['open 4']);
  });

  it('counts a registration once however often it answers', () => {
    const { b } = breaker();
    for (let i = 0; i < 10; i++) expect(b.record('same')).toBe(true);
    expect(b.isOpen()).toBe(false);
  });

  it('forgets answers older than the window', () => {
    const { b, advance } = breaker();
    b.record('a');
    b.record('b');
    b.record('c');
    advance(60_001);
    expect(b.record('d')).toBe(true); // a, b, c are out of the window
  });

  it('closes once the window holds no more than half the threshold, with no new answers needed', () => {
    const { b, events, advance } = breaker(4, 60_000);
    for (const id of ['a', 'b', 'c']) b.record(id);
    advance(30_000);
    for (const id of ['d', 'e']) b.record(id);
    expect(b.isOpen()).toBe(true);
    advance(30_001); // a, b, c expire; d and e remain: 2 ≤ 4/2
    expect(b.isOpen()).toBe(false);
    expect(events).toEqual(['open 5', 'close']);
    expect(b.record('f')).toBe(true);
  });

  it('stays open while answers keep coming above the closing level', () => {
    const { b, advance } = breaker(2, 10_000);
    for (const id of ['a', 'b', 'c']) b.record(id);
    for (let i = 0; i < 5; i++) {
      advance(5_000);
      expect(b.record(`x${i}`)).toBe(false);
      expect(b.record(`y${i}`)).toBe(false);
    }
  });
});

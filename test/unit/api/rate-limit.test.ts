import { describe, expect, it } from 'vitest';
import { TokenBuckets } from '../../../src/api/rate-limit.js';

function clock() {
  let now = 1_000_000;
  return { now: () => now, advance: (ms: number) => void (now += ms) };
}

describe('TokenBuckets', () => {
  it('allows the burst at once, then refuses with Retry-After in whole seconds', () => {
    const time = clock();
    const buckets = new TokenBuckets({ perSecond: 50, burst: 50, now: time.now });
    for (let i = 0; i < 50; i++) expect(buckets.take('u1')).toEqual({ allowed: true });
    expect(buckets.take('u1')).toEqual({ allowed: false, retryAfterSeconds: 1 });
  });

  it('refills at the sustained rate', () => {
    const time = clock();
    const buckets = new TokenBuckets({ perSecond: 50, burst: 50, now: time.now });
    for (let i = 0; i < 50; i++) buckets.take('u1');
    time.advance(100); // 5 tokens
    for (let i = 0; i < 5; i++) expect(buckets.take('u1').allowed).toBe(true);
    expect(buckets.take('u1').allowed).toBe(false);
    time.advance(1_000);
    let allowed = 0;
    while (buckets.take('u1').allowed) allowed++;
    expect(allowed).toBe(50); // capped at the burst, not 50 + what was owed
  });

  it('keeps users apart', () => {
    const time = clock();
    const buckets = new TokenBuckets({ perSecond: 1, burst: 2, now: time.now });
    expect([buckets.take('a'), buckets.take('a'), buckets.take('a')].map((d) => d.allowed)).toEqual([true, true, false]);
    expect(buckets.take('b').allowed).toBe(true);
  });

  it('rounds Retry-After up to the time the next token arrives', () => {
    const time = clock();
    const buckets = new TokenBuckets({ perSecond: 0.25, burst: 1, now: time.now });
    buckets.take('u');
    expect(buckets.take('u')).toEqual({ allowed: false, retryAfterSeconds: 4 });
    time.advance(3_500);
    expect(buckets.take('u')).toEqual({ allowed: false, retryAfterSeconds: 1 });
  });

  it('forgets idle users, so memory follows active ones', () => {
    const time = clock();
    const buckets = new TokenBuckets({ perSecond: 50, burst: 50, now: time.now });
    for (let i = 0; i < 999; i++) buckets.take(`user-${i}`);
    expect(buckets.size).toBe(999);
    time.advance(60_000);
    buckets.take('someone');
    expect(buckets.size).toBe(1);
  });
});

import { describe, expect, it } from 'vitest';
import { maxRetryAfterMs, parseRetryAfter } from '../../../src/transports/retry-after.js';

const now = Date.parse('2026-12-01T12:00:00Z');

describe('parseRetryAfter', () => {
  it.each([
    ['0', 0],
    ['7', 7_000],
    [' 120 ', 120_000],
    ['Tue, 01 Dec 2026 12:01:30 GMT', 90_000], // IMF-fixdate
    ['Tuesday, 01-Dec-26 12:00:05 GMT', 5_000], // RFC 850
    ['Tue Dec  1 12:00:10 2026', 10_000], // asctime, which is GMT without saying so
    ['Tue, 01 Dec 2026 11:00:00 GMT', 0], // in the past: now
    ['999999999', maxRetryAfterMs], // a year and more: capped
    ['Fri, 01 Jan 2100 00:00:00 GMT', maxRetryAfterMs],
  ])('%s → %s ms', (value, expected) => {
    expect(parseRetryAfter(value, now)).toBe(expected);
  });

  it.each([[undefined], [''], ['soon'], ['-5'], ['1.5'], ['0x10'], ['Tue, 99 Foo 2026 GMT'], ['2026-12-01T12:00:00Z']])('ignores %s', (value) => {
    expect(parseRetryAfter(value, now)).toBeUndefined();
  });

  it('reads the first of repeated headers', () => {
    expect(parseRetryAfter(['3', '9'], now)).toBe(3_000);
  });
});

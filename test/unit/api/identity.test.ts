import { describe, expect, it } from 'vitest';
import { isDeviceId, isUserId } from '../../../src/api/identity.js';

describe('isUserId', () => {
  it.each(['1', '42', '1234567890123456789', '9223372036854775807'])('accepts %s', (id) => expect(isUserId(id)).toBe(true));
  it.each([
    ['zero', '0'],
    ['a leading zero', '042'],
    ['a sign', '-1'],
    ['beyond int8', '9223372036854775808'],
    ['20 digits', '12345678901234567890'],
    ['a number, not a string', 42],
    ['hex', '0x10'],
    ['spaces', ' 1'],
    ['empty', ''],
  ])('refuses %s', (_name, id) => expect(isUserId(id)).toBe(false));
});

describe('isDeviceId', () => {
  it.each(['phone', 'a', 'x'.repeat(128), 'ü'.repeat(128), '😀'.repeat(128), 'with space', 'a:b/c%20'])('accepts %j', (id) =>
    expect(isDeviceId(id)).toBe(true),
  );
  it.each([
    ['empty', ''],
    ['129 characters', 'x'.repeat(129)],
    ['NUL', 'a\u0000b'],
    ['a newline', 'a\nb'],
    ['DEL', 'a\u007fb'],
    ['a C1 control', 'a\u0085b'],
    ['a lone surrogate', 'a\ud800b'],
    ['a number', 7],
    ['null', null],
  ])('refuses %s', (_name, id) => expect(isDeviceId(id)).toBe(false));
});

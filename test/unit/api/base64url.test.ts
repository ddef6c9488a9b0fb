import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { decodeBase64Url } from '../../../src/api/base64url.js';

describe('decodeBase64Url', () => {
  it('decodes unpadded and padded base64url of any length', () => {
    for (let length = 0; length < 70; length++) {
      const bytes = randomBytes(length);
      const unpadded = bytes.toString('base64url');
      const padded = unpadded.padEnd(Math.ceil(unpadded.length / 4) * 4, '=');
      expect(decodeBase64Url(unpadded)).toEqual(bytes);
      expect(decodeBase64Url(padded)).toEqual(bytes);
    }
  });

  it.each([
    ['standard-alphabet characters', 'ab+/'],
    ['whitespace', 'YWJj ZA'],
    ['a dot', 'YWJj.A'],
    ['wrong padding', 'YWI='.replace('=', '==')],
    ['padding where none fits', 'YWJj='],
    ['an impossible length', 'YWJjZ'],
    ['non-zero slack bits (non-canonical)', 'YWJ'],
    ['padding in the middle', 'YW=Jj'],
  ])('refuses %s', (_name, text) => {
    expect(decodeBase64Url(text)).toBeUndefined();
  });
});

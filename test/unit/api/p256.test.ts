import { createECDH } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { isUncompressedP256Point } from '../../../src/api/p256.js';

const p = 0xffffffff00000001000000000000000000000000ffffffffffffffffffffffffn;
const point = () => {
  const ecdh = createECDH('prime256v1');
  ecdh.generateKeys();
  return ecdh.getPublicKey();
};
const hex32 = (n: bigint) => Buffer.from(n.toString(16).padStart(64, '0'), 'hex');

describe('isUncompressedP256Point', () => {
  it('accepts real public keys', () => {
    for (let i = 0; i < 20; i++) expect(isUncompressedP256Point(point())).toBe(true);
  });

  it('accepts the generator point G', () => {
    const g = Buffer.from(
      '046b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c2964fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5',
      'hex',
    );
    expect(isUncompressedP256Point(g)).toBe(true);
  });

  it('refuses a point off the curve', () => {
    const bad = point();
    bad[64] = bad[64]! ^ 0x01;
    expect(isUncompressedP256Point(bad)).toBe(false);
  });

  it('refuses the compressed form, a wrong prefix and wrong lengths', () => {
    const good = point();
    const ecdh = createECDH('prime256v1');
    ecdh.generateKeys();
    expect(isUncompressedP256Point(ecdh.getPublicKey(null, 'compressed'))).toBe(false);
    expect(isUncompressedP256Point(Buffer.concat([Buffer.from([0x05]), good.subarray(1)]))).toBe(false);
    expect(isUncompressedP256Point(good.subarray(0, 64))).toBe(false);
    expect(isUncompressedP256Point(Buffer.concat([good, Buffer.from([0])]))).toBe(false);
    expect(isUncompressedP256Point(Buffer.alloc(65))).toBe(false);
  });

  it('refuses coordinates that are not reduced modulo p (x + p satisfies the equation mod p)', () => {
    const good = point();
    const x = BigInt(`0x${good.subarray(1, 33).toString('hex')}`);
    if (x + p < 2n ** 256n) {
      expect(isUncompressedP256Point(Buffer.concat([Buffer.from([4]), hex32(x + p), good.subarray(33)]))).toBe(false);
    }
    expect(isUncompressedP256Point(Buffer.concat([Buffer.from([4]), hex32(p), good.subarray(33)]))).toBe(false);
  });
});

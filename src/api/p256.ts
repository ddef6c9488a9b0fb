/**
 * Is this a valid RFC 8291 receiver key: a 65-byte uncompressed point on P-256 (SEC 1 §2.3.4)?
 * Checked arithmetically (x, y < p and y² = x³ − 3x + b mod p) rather than by handing it to a
 * crypto library, so the answer does not depend on what a library chooses to tolerate.
 */
const p = 0xffffffff00000001000000000000000000000000ffffffffffffffffffffffffn;
const b = 0x5ac635d8aa3a93e7b3ebbd55769886bc651d06b0cc53b0f63bce3c3e27d2604bn;

export function isUncompressedP256Point(bytes: Uint8Array): boolean {
  if (bytes.length !== 65 || bytes[0] !== 0x04) return false;
  const x = toBigInt(bytes.subarray(1, 33));
  const y = toBigInt(bytes.subarray(33, 65));
  if (x >= p || y >= p) return false;
  const left = (y * y) % p;
  const right = (((x * x * x - 3n * x + b) % p) + p) % p;
  return left === right;
}

function toBigInt(bytes: Uint8Array): bigint {
  return BigInt(`0x${Buffer.from(bytes).toString('hex')}`);
}

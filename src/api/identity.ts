/**
 * What a user id and a device id may look like, wherever they come from (JWT claims, the
 * revocation path). Kept strict so that whatever reaches PostgreSQL and Temporal workflow ids
 * is well-formed: a NUL or a lone surrogate would be a database error, not a 4xx.
 */
const maxInt8 = 9_223_372_036_854_775_807n;

/** A positive decimal snowflake that fits in `bigint`. */
export function isUserId(value: unknown): value is string {
  return typeof value === 'string' && /^[1-9][0-9]{0,18}$/.test(value) && BigInt(value) <= maxInt8;
}

/** 1–128 characters, no control characters, well-formed Unicode. */
export function isDeviceId(value: unknown): value is string {
  if (typeof value !== 'string' || value.length === 0) return false;
  if (hasControlOrLoneSurrogate(value)) return false;
  return [...value].length <= 128;
}

/** Control characters (C0, DEL, C1) or an unpaired UTF-16 surrogate. */
export function hasControlOrLoneSurrogate(value: string): boolean {
  // With the `u` flag, a surrogate class matches only surrogates that are not part of a pair.
  return /[\p{Cc}\uD800-\uDFFF]/u.test(value);
}

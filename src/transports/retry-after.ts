/**
 * `Retry-After` (RFC 9110 §10.2.3): either delay-seconds or an HTTP-date. The value comes
 * from a provider or, for UnifiedPush, from an attacker-chosen server, so the result is
 * clamped: never negative, never more than `maxMs` (a server cannot park a device forever).
 */
export const maxRetryAfterMs = 60 * 60 * 1000;

/** Milliseconds to wait, or undefined when the header is absent or not understood. */
export function parseRetryAfter(
  value: string | string[] | undefined,
  nowMs: number = Date.now(),
  maxMs: number = maxRetryAfterMs,
): number | undefined {
  const text = (Array.isArray(value) ? value[0] : value)?.trim();
  if (text === undefined || text === '') return undefined;
  if (/^\d+$/.test(text)) return clamp(Number(text) * 1000, maxMs);
  // Every HTTP-date form (IMF-fixdate, RFC 850, asctime) starts with a day name and is in
  // GMT; asctime says so nowhere, and Date.parse would read it as local time.
  if (!/^[A-Za-z]{3,9},? /.test(text)) return undefined;
  const date = Date.parse(/ GMT$/.test(text) ? text : `${text} GMT`);
  return Number.isNaN(date) ? undefined : clamp(date - nowMs, maxMs);
}

function clamp(ms: number, maxMs: number): number {
  return Math.min(Math.max(0, ms), maxMs);
}

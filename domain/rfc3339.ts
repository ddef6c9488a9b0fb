/**
 * RFC 3339 date-times as PostgreSQL stores them: the message events' `created_at` (the bridge)
 * and `BRIDGE_START_AT` (configuration) are read by this one parser.
 */

/** What both PostgreSQL and `Date#toISOString` represent as a four-digit year (PostgreSQL has no year 0). */
const EARLIEST = Date.parse('0001-01-01T00:00:00Z');
const LATEST = Date.parse('9999-12-31T23:59:59.999Z');

const rfc3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|([+-])(\d{2}):(\d{2}))$/;

/** An RFC 3339 `date-time` (§5.6, leap second allowed) as a Date, or undefined. */
export function parseRfc3339(value: unknown): Date | undefined {
  if (typeof value !== 'string') return undefined;
  const match = rfc3339.exec(value);
  if (match === null) return undefined;
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const [offsetHours, offsetMinutes] = [Number(match[10] ?? 0), Number(match[11] ?? 0)];
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  if (hour > 23 || minute > 59 || second > 60 || offsetHours > 23 || offsetMinutes > 59) return undefined;
  const fractionMs = match[7] === undefined ? 0 : Math.floor(Number(`0${match[7]}`) * 1000);
  const offsetMs = (match[9] === '-' ? -1 : 1) * (offsetHours * 60 + offsetMinutes) * 60_000;
  // Date.parse takes four-digit years as written (Date.UTC would map 0–99 to 1900–1999) but
  // knows no leap second: count :60 as :59 plus one second, as PostgreSQL does.
  const leap = second === 60 ? 1_000 : 0;
  const wall = Date.parse(`${match[1]}-${match[2]}-${match[3]}T${match[4]}:${match[5]}:${leap ? '59' : match[6]}Z`);
  const utc = wall + fractionMs + leap - offsetMs;
  return utc >= EARLIEST && utc <= LATEST ? new Date(utc) : undefined;
}

function daysInMonth(year: number, month: number): number {
  const leapYear = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  return [31, leapYear ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]!;
}

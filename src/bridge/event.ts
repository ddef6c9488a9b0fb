/**
 * MESSAGE_CREATE events (docs/design.md, Message events): subject `channel.<channel_id>.MESSAGE_CREATE`, body
 * `{"id", "channel_id", "author_id", "created_at"}` (other fields ignored). Ids are decimal
 * snowflake strings — positive and within int8; `created_at` is RFC 3339. Anything else is
 * malformed: the bridge terminates it rather than let it be redelivered forever.
 */
export interface MessageEvent {
  readonly messageId: string;
  readonly channelId: string;
  readonly authorId: string;
  readonly createdAt: Date;
}

export type ParsedEvent = { readonly ok: true; readonly event: MessageEvent } | { readonly ok: false; readonly reason: MalformedReason };

export type MalformedReason = 'subject' | 'not_json' | 'not_object' | 'id' | 'channel_id' | 'author_id' | 'created_at' | 'channel_mismatch';

const INT8_MAX = (1n << 63n) - 1n;

/**
 * Parses an event received on `subject`. `subjectPrefix` is what precedes `channel.` in the
 * stream's subjects ('' in production).
 */
export function parseMessageEvent(subject: string, data: Uint8Array, subjectPrefix = ''): ParsedEvent {
  const subjectChannel = channelOfSubject(subject, subjectPrefix);
  if (subjectChannel === undefined) return malformed('subject');
  let body: unknown;
  try {
    body = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(data));
  } catch {
    return malformed('not_json');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return malformed('not_object');
  const fields = body as Record<string, unknown>;
  for (const [field, reason] of [
    ['id', 'id'],
    ['channel_id', 'channel_id'],
    ['author_id', 'author_id'],
  ] as const) {
    if (!isSnowflake(fields[field])) return malformed(reason);
  }
  const createdAt = parseRfc3339(fields.created_at);
  if (createdAt === undefined) return malformed('created_at');
  if (fields.channel_id !== subjectChannel) return malformed('channel_mismatch');
  return {
    ok: true,
    event: { messageId: fields.id as string, channelId: subjectChannel, authorId: fields.author_id as string, createdAt },
  };
}

/** The `<channel_id>` of `<prefix>channel.<channel_id>.MESSAGE_CREATE`, if the subject has that shape and a snowflake there. */
export function channelOfSubject(subject: string, subjectPrefix = ''): string | undefined {
  if (!subject.startsWith(`${subjectPrefix}channel.`) || !subject.endsWith('.MESSAGE_CREATE')) return undefined;
  const token = subject.slice(subjectPrefix.length + 'channel.'.length, -'.MESSAGE_CREATE'.length);
  return isSnowflake(token) ? token : undefined;
}

/** A positive decimal integer within int8, in canonical form (no sign, no leading zero). */
export function isSnowflake(value: unknown): value is string {
  return typeof value === 'string' && /^[1-9][0-9]{0,18}$/.test(value) && BigInt(value) <= INT8_MAX;
}

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

function malformed(reason: MalformedReason): ParsedEvent {
  return { ok: false, reason };
}

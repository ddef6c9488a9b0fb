/**
 * MESSAGE_CREATE events (docs/design.md, Message events): subject `channel.<channel_id>.MESSAGE_CREATE`, body
 * `{"id", "channel_id", "author_id", "created_at"}` (other fields ignored). Ids are decimal
 * snowflake strings — positive and within int8; `created_at` is RFC 3339. Anything else is
 * malformed: the bridge terminates it rather than let it be redelivered forever.
 */
import { parseRfc3339 } from '../../domain/rfc3339.js';
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

function malformed(reason: MalformedReason): ParsedEvent {
  return { ok: false, reason };
}

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { channelOfSubject, parseMessageEvent } from '../../../src/bridge/event.js';
import { parseRfc3339 } from '../../../domain/rfc3339.js';

const encode = (value: unknown) => new TextEncoder().encode(typeof value === 'string' ? value : JSON.stringify(value));
const valid = { id: '1310000000000000001', channel_id: '42', author_id: '7', created_at: '2026-10-15T12:00:00.123Z' };
const parse = (body: unknown, subject = 'channel.42.MESSAGE_CREATE') => parseMessageEvent(subject, encode(body));

describe('MESSAGE_CREATE events', () => {
  it('a valid event yields its ids and time; other fields are ignored', () => {
    expect(parse({ ...valid, content: 'ignored', nonce: 3 })).toEqual({
      ok: true,
      event: { messageId: valid.id, channelId: '42', authorId: '7', createdAt: new Date('2026-10-15T12:00:00.123Z') },
    });
  });

  it('a channel_id differing from the subject is malformed', () => {
    expect(parse({ ...valid, channel_id: '43' })).toEqual({ ok: false, reason: 'channel_mismatch' });
  });

  it.each([
    ['not JSON', '{"id":', 'not_json'],
    ['invalid UTF-8', new Uint8Array([0x7b, 0xff, 0x7d]), 'not_json'],
    ['an array', [valid], 'not_object'],
    ['null', 'null', 'not_object'],
    ['a numeric id', { ...valid, id: 131 }, 'id'],
    ['a missing id', { ...valid, id: undefined }, 'id'],
    ['a zero id', { ...valid, id: '0' }, 'id'],
    ['a negative id', { ...valid, id: '-5' }, 'id'],
    ['a leading zero', { ...valid, id: '042' }, 'id'],
    ['an id beyond int8', { ...valid, id: '9223372036854775808' }, 'id'],
    ['an id with spaces', { ...valid, id: ' 5' }, 'id'],
    ['a numeric channel_id', { ...valid, channel_id: 42 }, 'channel_id'],
    ['a non-decimal author_id', { ...valid, author_id: '0x7' }, 'author_id'],
    ['a created_at without zone', { ...valid, created_at: '2026-10-15T12:00:00' }, 'created_at'],
    ['a created_at as epoch number', { ...valid, created_at: 1760529600 }, 'created_at'],
  ])('%s is malformed', (_name, body, reason) => {
    const data = body instanceof Uint8Array ? body : encode(body);
    expect(parseMessageEvent('channel.42.MESSAGE_CREATE', data)).toEqual({ ok: false, reason });
  });

  it('the largest int8 is a valid id', () => {
    expect(parse({ ...valid, id: '9223372036854775807' }).ok).toBe(true);
  });

  it('a subject not of the form channel.<id>.MESSAGE_CREATE is malformed', () => {
    expect(parse(valid, 'channel.42.MESSAGE_UPDATE')).toEqual({ ok: false, reason: 'subject' });
    expect(parse(valid, 'channel..MESSAGE_CREATE')).toEqual({ ok: false, reason: 'subject' });
    expect(parse(valid, 'channel.general.MESSAGE_CREATE')).toEqual({ ok: false, reason: 'subject' });
    expect(channelOfSubject('channel.4.2.MESSAGE_CREATE')).toBeUndefined();
  });

  it('a subject prefix is honoured and required', () => {
    expect(channelOfSubject('test-1.channel.42.MESSAGE_CREATE', 'test-1.')).toBe('42');
    expect(channelOfSubject('channel.42.MESSAGE_CREATE', 'test-1.')).toBeUndefined();
    expect(parseMessageEvent('test-1.channel.42.MESSAGE_CREATE', encode(valid), 'test-1.').ok).toBe(true);
  });

  it('never throws, whatever the bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), fc.string(), (data, subject) => {
        expect(() => parseMessageEvent(subject, data)).not.toThrow();
      }),
    );
  });
});

describe('RFC 3339 date-time', () => {
  it.each([
    ['2026-10-15T12:00:00Z', '2026-10-15T12:00:00.000Z'],
    ['2026-10-15t12:00:00z', '2026-10-15T12:00:00.000Z'],
    ['2026-10-15T14:30:00+02:30', '2026-10-15T12:00:00.000Z'],
    ['2026-10-15T12:00:00.987654321-00:00', '2026-10-15T12:00:00.987Z'],
    ['2024-02-29T00:00:00Z', '2024-02-29T00:00:00.000Z'],
    ['2016-12-31T23:59:60Z', '2017-01-01T00:00:00.000Z'],
    ['0050-06-01T00:00:00Z', '0050-06-01T00:00:00.000Z'],
  ])('%s is %s', (text, iso) => {
    expect(parseRfc3339(text)?.toISOString()).toBe(iso);
  });

  it.each([
    '2026-13-01T00:00:00Z',
    '2026-02-29T00:00:00Z',
    '1900-02-29T00:00:00Z',
    '2026-10-15T24:00:00Z',
    '2026-10-15T12:60:00Z',
    '2026-10-15T12:00:00+24:00',
    '2026-10-15 12:00:00Z',
    '26-10-15T12:00:00Z',
    '0000-06-01T00:00:00Z',
    '0001-01-01T00:00:00+01:00',
    '',
  ])('%s is rejected', (text) => {
    expect(parseRfc3339(text)).toBeUndefined();
  });
});

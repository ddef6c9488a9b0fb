/** The decision table of docs/design.md, Recipients, as the simulated phone applies it after decrypting. */
import { describe, expect, it } from 'vitest';
import { decide, mentions } from '../../../simulator/notification.js';

const me = '42';
const message = (text: string, authorId = '7') => ({ id: '1', authorId, text });
const server = { me, isDm: false, muted: false };
const dm = { me, isDm: true, muted: false };

describe('what the phone shows', () => {
  it.each([
    ['a DM, whatever it says', message('lunch?'), dm, { notify: true, reason: 'dm' }],
    ['a server message mentioning me', message('ping <@42> please'), server, { notify: true, reason: 'mention' }],
    ['a server message mentioning me, nickname form', message('<@!42>'), server, { notify: true, reason: 'mention' }],
    ['a server message for @everyone', message('@everyone standup'), server, { notify: true, reason: 'everyone' }],
    ['a server message for nobody in particular', message('deploy done'), server, { notify: false, reason: 'no-mention' }],
    ['a server message mentioning someone else', message('<@421> and <@4>'), server, { notify: false, reason: 'no-mention' }],
    ['an address that merely contains @everyone', message('write to ops@everyone.example'), server, { notify: false, reason: 'no-mention' }],
    ['a muted DM', message('lunch?'), { ...dm, muted: true }, { notify: false, reason: 'muted' }],
    ['a muted channel, even mentioning me', message('<@42>'), { ...server, muted: true }, { notify: false, reason: 'muted' }],
    ['my own DM from another device', message('lunch?', me), dm, { notify: false, reason: 'own-message' }],
    ['my own @everyone from another device', message('@everyone hi', me), server, { notify: false, reason: 'own-message' }],
  ] as const)('%s', (_what, msg, context, expected) => {
    expect(decide(msg, context)).toEqual(expected);
  });

  it('finds a mention only for the exact id', () => {
    expect(mentions('<@42>', '42')).toBe(true);
    expect(mentions('<@420>', '42')).toBe(false);
    expect(mentions('@42', '42')).toBe(false);
  });
});

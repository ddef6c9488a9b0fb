/**
 * What the phone shows after a drain: the decision table of docs/design.md, Recipients, applied on the phone to
 * messages it fetched and decrypted itself (mentions are inside the ciphertext; the server
 * never sees them).
 *
 *   | Message                                        | Notification                      |
 *   | DM or group DM                                 | always (unless muted)             |
 *   | server channel, mentions you or @everyone      | yes                               |
 *   | server channel, anything else                  | no — woken, drained, nothing shown |
 *   | muted scope                                    | never (re-checked on the phone)   |
 *   | your own message from another device           | never                             |
 */
export interface PlainMessage {
  readonly id: string;
  readonly authorId: string;
  /** The decrypted text; mentions are `<@user id>` markers, and `@everyone`. */
  readonly text: string;
}

export interface MessageContext {
  /** The reader: whose phone this is. */
  readonly me: string;
  readonly isDm: boolean;
  /** A live mute on the channel or its server, as the phone knows it now. */
  readonly muted: boolean;
}

export type Decision =
  | { readonly notify: true; readonly reason: 'dm' | 'mention' | 'everyone' }
  | { readonly notify: false; readonly reason: 'muted' | 'own-message' | 'no-mention' };

/** The decision table, for one message. Order matters: mute and authorship win over everything. */
export function decide(message: PlainMessage, context: MessageContext): Decision {
  if (context.muted) return { notify: false, reason: 'muted' };
  if (message.authorId === context.me) return { notify: false, reason: 'own-message' };
  if (context.isDm) return { notify: true, reason: 'dm' };
  if (mentions(message.text, context.me)) return { notify: true, reason: 'mention' };
  if (/(^|[^\w])@everyone\b/.test(message.text)) return { notify: true, reason: 'everyone' };
  return { notify: false, reason: 'no-mention' };
}

/** Whether the text holds a `<@id>` marker for this user (`<@!id>` too, as Discord-style clients write it). */
export function mentions(text: string, userId: string): boolean {
  return new RegExp(`<@!?${userId.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}>`).test(text);
}

/** Why nothing was shown, or what was, in words. */
export function describeDecision(decision: Decision): string {
  switch (decision.reason) {
    case 'dm':
      return 'a DM: always shown';
    case 'mention':
      return 'mentions you';
    case 'everyone':
      return 'mentions @everyone';
    case 'muted':
      return 'muted scope: never shown';
    case 'own-message':
      return 'your own message: never shown';
    case 'no-mention':
      return 'no mention: woken, drained, nothing shown';
  }
}

/**
 * The send activity's result as a workflow reads it back from its history. Histories of
 * earlier plans recorded `{ outcome: … }` with other words; a running history must replay with
 * the decisions it made then, so those are read into today's vocabulary here, and nowhere else.
 */
import type { SendResult } from '../activities/registration.js';

/** What a send recorded before the one outcome vocabulary (`SendResult` replaced it). */
export type EarlierSendResult =
  | { readonly outcome: 'delivered' | 'gone' }
  | { readonly outcome: 'dead'; readonly reason: string }
  | { readonly outcome: 'deferred'; readonly reason: string; readonly until: number }
  /** A configuration error once failed the activity instead: recorded by no worker since, consumed with no effect. */
  | { readonly outcome: 'config-error'; readonly reason: string };

/**
 * The recorded result in today's words, or undefined for an earlier plan's `config-error`
 * (which changed nothing in the workflow). An earlier `deferred` named no cause: it reads as
 * `failing`; the workflow acts on a deferral's `until` alone, whatever its cause.
 */
export function sendResultOf(recorded: SendResult | EarlierSendResult): SendResult | undefined {
  if ('kind' in recorded) return recorded;
  switch (recorded.outcome) {
    case 'delivered':
    case 'gone':
      return { kind: recorded.outcome };
    case 'dead':
      return { kind: 'dead', reason: recorded.reason };
    case 'deferred':
      return { kind: 'deferred', cause: 'failing', reason: recorded.reason, until: recorded.until };
    case 'config-error':
      return undefined;
  }
}

/**
 * A send result recorded by an earlier plan (`{ outcome }`) reads as today's (`{ kind }`), with
 * the effect it had then: histories in flight replay (test/workflow/replay.test.ts replays
 * whole ones).
 */
import { describe, expect, it } from 'vitest';
import { sendResultOf, type EarlierSendResult } from '../../../workflows/send-result.js';
import type { SendResult } from '../../../activities/registration.js';

describe('sendResultOf', () => {
  it.each<[EarlierSendResult, SendResult | undefined]>([
    [{ outcome: 'delivered' }, { kind: 'delivered' }],
    [{ outcome: 'gone' }, { kind: 'gone' }],
    [
      { outcome: 'dead', reason: 'UnifiedPush 410: endpoint gone' },
      { kind: 'dead', reason: 'UnifiedPush 410: endpoint gone' },
    ],
    [
      { outcome: 'deferred', reason: 'UnifiedPush 500', until: 1_000 },
      { kind: 'deferred', cause: 'failing', reason: 'UnifiedPush 500', until: 1_000 },
    ],
    // It changed nothing in the workflow then, and changes nothing now.
    [{ outcome: 'config-error', reason: 'FCM disabled' }, undefined],
  ])('reads %j', (earlier, today) => {
    expect(sendResultOf(earlier)).toEqual(today);
  });

  it("passes today's results through", () => {
    const results: SendResult[] = [
      { kind: 'delivered' },
      { kind: 'misconfigured', reason: 'FCM disabled', until: 5 },
      { kind: 'deferred', cause: 'rate_limited', reason: 'UnifiedPush 429: rate limited', until: 7 },
    ];
    for (const result of results) expect(sendResultOf(result)).toBe(result);
  });
});

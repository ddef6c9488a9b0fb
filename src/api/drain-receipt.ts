/**
 * The drain is the receipt of the wakes before it: a phone drains only once a wake reached the
 * app (or its user opened it). What a drain cleared and took becomes the end-to-end figures —
 * a message's time to the drain that took it, a wake's claim to the drain that cleared it — and
 * what the phone reported of its wake is counted. Observed here, where the drain commits.
 */
import type { Drained } from './drain.js';
import type { WakeReport } from './drain-request.js';
import { messageToDrain, wakeReports, wakeToDrain } from './metrics.js';

export function observeDrain(drained: Drained, wake: WakeReport | undefined, now = Date.now()): void {
  const { transport, clearedWake, taken } = drained;
  const seconds = (since: number) => Math.max(0, now - since) / 1000;
  if (clearedWake !== undefined) wakeToDrain.observe({ transport, priority: clearedWake.priority }, seconds(clearedWake.claimedAt));
  for (const row of taken) messageToDrain.observe({ transport, priority: row.isDm ? 'high' : 'normal' }, seconds(row.firstAt));
  if (wake !== undefined) wakeReports.inc({ transport, original_priority: wake.originalPriority, priority: wake.priority });
}

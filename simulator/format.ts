/** How the simulator and the demo print what a phone saw. Never a token, an endpoint or a key. */
import type { DrainItem } from './api-client.js';
import type { ReceivedWake } from './wake-source.js';

export function describeWake(wake: ReceivedWake): string {
  const problems = wake.problems.length === 0 ? '' : `  PROBLEMS: ${wake.problems.join('; ')}`;
  if (wake.transport === 'fcm') {
    const lowered =
      wake.originalPriority !== undefined && wake.originalPriority !== wake.priority
        ? ` (sent ${wake.originalPriority.toUpperCase()}: lowered by FCM)`
        : '';
    return `wake via FCM, priority ${wake.priority.toUpperCase()}${lowered}, data ${wake.payload ?? '?'} (${wake.bytes}-byte send request)${problems}`;
  }
  const body = wake.encrypted
    ? `${wake.bytes}-byte RFC 8291 record, decrypted with the phone's key: ${wake.payload ?? '(does not decrypt)'}`
    : `${wake.bytes} bytes in the clear: ${wake.payload ?? '?'}`;
  return `wake via UnifiedPush, Urgency ${wake.priority}, ${body}${problems}`;
}

export function describeDrainItem(item: DrainItem, channelName?: string): string {
  const where =
    channelName ??
    (item.is_dm ? `DM ${item.channel_id}` : `channel ${item.channel_id}${item.server_id === null ? '' : ` (server ${item.server_id})`}`);
  const count = `${item.message_count} message${item.message_count === 1 ? '' : 's'}`;
  return `${where}: ${count}, messages ${item.first_message_id}…${item.last_message_id} since ${item.first_at}`;
}

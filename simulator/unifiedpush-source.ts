/** A phone with a UnifiedPush distributor: an endpoint on a local distributor, and (by default) RFC 8291 keys. */
import { createDeviceKeys } from './device-keys.js';
import type { DistributorMessage, LocalDistributor } from './distributor.js';
import { WakeQueue } from './wake-queue.js';
import type { ReceivedWake, WakeSource } from './wake-source.js';

export function unifiedPushSource(distributor: LocalDistributor, options: { readonly encrypted?: boolean } = {}): WakeSource {
  const keys = options.encrypted === false ? undefined : createDeviceKeys();
  const endpoint = distributor.register(keys);
  const queue = new WakeQueue<ReceivedWake>();
  let open = true;
  distributor.onMessage((message) => {
    if (open && message.endpoint === endpoint) queue.push(toWake(message, keys !== undefined));
  });
  return {
    transport: 'unifiedpush',
    registration: {
      transport: 'unifiedpush',
      token: endpoint,
      ...(keys === undefined ? {} : { p256dh: keys.p256dh.toString('base64url'), auth: keys.auth.toString('base64url') }),
    },
    description: `UnifiedPush via the distributor at ${new URL(endpoint).origin}${keys === undefined ? ', no keys (clear wakes)' : ', RFC 8291 keys'}`,
    next: (timeoutMs, signal) => queue.next(timeoutMs, signal),
    async close() {
      open = false;
      distributor.unregister(endpoint);
    },
  };
}

function toWake(message: DistributorMessage, encrypted: boolean): ReceivedWake {
  return {
    transport: 'unifiedpush',
    at: message.at,
    priority: message.urgency === 'high' ? 'high' : 'normal',
    encrypted: encrypted && message.contentEncoding === 'aes128gcm',
    bytes: message.bodyBytes,
    payload: message.plaintext,
    problems: message.problems,
  };
}

/**
 * A simulated phone: registers with an instance the way the app does, receives its wakes,
 * and drains — the server-facing half of docs/design.md, The app. What to show is decided by the caller
 * (notification.ts), from messages the phone would fetch and decrypt itself.
 */
import { deviceApi, type DeviceApi, type DrainItem, type RegistrationJson, type WakeReportBody } from './api-client.js';
import type { ReceivedWake, WakeSource } from './wake-source.js';

export interface SimulatedPhone {
  readonly api: DeviceApi;
  readonly source: WakeSource;
  /** `PUT /api/push/registration` with this phone's transport, token or endpoint, and keys. */
  register(): Promise<RegistrationJson>;
  /** The next wake; rejects with WakeTimeoutError after `timeoutMs`. */
  nextWake(timeoutMs: number, signal?: AbortSignal): Promise<ReceivedWake>;
  /**
   * `POST /api/push/drain`: what is waiting, per channel. Given the wake that woke it, the phone
   * says what it saw of it where it knows (FCM: the priority sent and the one delivered), as the
   * app does.
   */
  drain(after?: ReceivedWake): Promise<DrainItem[]>;
  /** `DELETE /api/push/registration`, as the app does on logout. */
  unregister(): Promise<void>;
  close(): Promise<void>;
}

export function simulatedPhone(options: { readonly apiUrl: string; readonly jwt: string; readonly source: WakeSource }): SimulatedPhone {
  const api = deviceApi(options.apiUrl, options.jwt);
  return {
    api,
    source: options.source,
    register: () => api.register(options.source.registration),
    nextWake: (timeoutMs, signal) => options.source.next(timeoutMs, signal),
    drain: (after) => api.drain(after === undefined ? undefined : reportOf(after)),
    unregister: () => api.unregister(),
    close: () => options.source.close(),
  };
}

/** What the app can tell of a wake: FCM reports both priorities; a UnifiedPush message only its urgency, which says nothing of a change. */
function reportOf(wake: ReceivedWake): WakeReportBody | undefined {
  return wake.originalPriority === undefined ? undefined : { priority: wake.priority, original_priority: wake.originalPriority };
}

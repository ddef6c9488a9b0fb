/**
 * The device API as the Android app calls it (docs/design.md, Device API): every call carries the device's
 * JWT, and the device is the token's. Errors keep the contract's `{error, message}`.
 */
import type { DrainItem } from '../src/api/drain.js';
import type { TransportName, WakePriority } from '../domain/vocabulary.js';

/** One drained channel, as the api answers it. */
export type { DrainItem };

export interface RegistrationBody {
  readonly transport: TransportName;
  readonly token: string;
  readonly p256dh?: string;
  readonly auth?: string;
}

export interface RegistrationJson {
  readonly transport: TransportName;
  readonly created_at: string;
  readonly updated_at: string;
  readonly encrypted?: boolean;
  /** The device's delivery state (docs/api.md). */
  readonly last_woken_at?: string | null;
  readonly last_drained_at?: string | null;
  readonly delivery?: {
    readonly state: 'ok' | 'held';
    readonly reason?: string;
    readonly until?: string;
    readonly failures: number;
    readonly wakes_since_drain: number;
    readonly priority_lowered: boolean;
  };
}

/** What the phone saw of its wake (FCM's `getPriority()`, `getOriginalPriority()`). */
export interface WakeReportBody {
  readonly priority: WakePriority;
  readonly original_priority: WakePriority;
}

export interface PushConfig {
  readonly fcm: boolean;
  readonly unifiedpush: boolean;
  readonly vapid_public_key?: string;
}

export class ApiCallError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(`${status} ${code}: ${message}`);
    this.name = 'ApiCallError';
  }
}

export interface DeviceApi {
  config(): Promise<PushConfig>;
  register(body: RegistrationBody): Promise<RegistrationJson>;
  registration(): Promise<RegistrationJson | null>;
  /** `POST /api/push/registration/test`: one test wake; the registration as it stands when asked. */
  testWake(): Promise<RegistrationJson>;
  /** `POST /api/push/drain`, with what the phone saw of the wake that woke it when it knows. */
  drain(report?: WakeReportBody): Promise<DrainItem[]>;
  unregister(): Promise<void>;
}

export function deviceApi(apiUrl: string, jwt: string, timeoutMs = 10_000): DeviceApi {
  const base = apiUrl.replace(/\/+$/, '');
  const call = async (method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown }> => {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${jwt}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await response.text();
    const json: unknown = text === '' ? undefined : JSON.parse(text);
    return { status: response.status, json };
  };
  const expect = async <T>(method: string, path: string, ok: readonly number[], body?: unknown): Promise<{ status: number; value: T }> => {
    const { status, json } = await call(method, path, body);
    if (!ok.includes(status)) {
      const error = (json ?? {}) as { error?: string; message?: string };
      throw new ApiCallError(status, error.error ?? 'unexpected', error.message ?? `${method} ${path} answered ${status}`);
    }
    return { status, value: json as T };
  };
  return {
    config: async () => (await expect<PushConfig>('GET', '/api/push/config', [200])).value,
    register: async (body) => (await expect<RegistrationJson>('PUT', '/api/push/registration', [200], body)).value,
    registration: async () => {
      const { status, value } = await expect<RegistrationJson>('GET', '/api/push/registration', [200, 404]);
      return status === 404 ? null : value;
    },
    testWake: async () => (await expect<RegistrationJson>('POST', '/api/push/registration/test', [202])).value,
    drain: async (report) => (await expect<DrainItem[]>('POST', '/api/push/drain', [200], report === undefined ? undefined : { wake: report })).value,
    unregister: async () => void (await expect('DELETE', '/api/push/registration', [204])),
  };
}

/**
 * The optional body of `POST /api/push/drain` (docs/design.md, Device API): what the phone saw of
 * the wake that woke it — FCM's `RemoteMessage.getPriority()` and `getOriginalPriority()` —
 * as `{"wake": {"priority", "original_priority"}}`. No body, or `{}`, is a drain that reports
 * nothing. Unknown fields are ignored. docs/openapi.yaml states the same rules as `DrainRequest`.
 */
import type { WakePriority } from '../../domain/vocabulary.js';
import { ApiError } from './errors.js';

/** What the phone reported of the wake that woke it. */
export interface WakeReport {
  /** The priority it was delivered with. */
  readonly priority: WakePriority;
  /** The priority it was sent with. */
  readonly originalPriority: WakePriority;
}

export interface DrainRequest {
  readonly wake?: WakeReport;
}

/** Throws `ApiError('invalid_request')` naming the first field that breaks a rule. `undefined`: no body. */
export function parseDrainRequest(body: unknown): DrainRequest {
  if (body === undefined) return {};
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalid('body', 'must be a JSON object');
  const { wake } = body as Record<string, unknown>;
  if (wake === undefined) return {};
  if (typeof wake !== 'object' || wake === null || Array.isArray(wake)) throw invalid('wake', 'must be an object');
  const { priority, original_priority: originalPriority } = wake as Record<string, unknown>;
  if (!isPriority(priority)) throw invalid('wake.priority', 'must be "high" or "normal"');
  if (!isPriority(originalPriority)) throw invalid('wake.original_priority', 'must be "high" or "normal"');
  return { wake: { priority, originalPriority } };
}

/** A HIGH wake the phone got as NORMAL: FCM lowered it. */
export function lowered(report: WakeReport): boolean {
  return report.originalPriority === 'high' && report.priority === 'normal';
}

function isPriority(value: unknown): value is WakePriority {
  return value === 'high' || value === 'normal';
}

function invalid(field: string, rule: string): ApiError {
  return new ApiError('invalid_request', `${field}: ${rule}`);
}

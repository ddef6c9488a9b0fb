/** The FCM error table's reading of bodies: which field wins, and what never prunes. */
import { describe, expect, it } from 'vitest';
import { classifyFcmError } from '../../../src/transports/fcm-errors.js';

const fcmDetail = (errorCode: string) => ({ '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError', errorCode });
const tokenViolation = {
  '@type': 'type.googleapis.com/google.rpc.BadRequest',
  fieldViolations: [{ field: 'message.token', description: 'Invalid registration token' }],
};
const body = (status: string, details: unknown[] = [], message = 'x') => ({ error: { code: 0, status, message, details } });

describe('classifyFcmError', () => {
  it('reads FcmError.errorCode before error.status', () => {
    expect(classifyFcmError(404, body('NOT_FOUND', [fcmDetail('UNREGISTERED')]))).toEqual({
      kind: 'dead',
      reason: 'FCM 404 UNREGISTERED',
      guarded: false,
    });
    expect(classifyFcmError(404, body('NOT_FOUND'))).toEqual({ kind: 'misconfigured', reason: 'FCM 404 NOT_FOUND' });
  });

  it('prunes on INVALID_ARGUMENT only when it is about message.token, and guards it', () => {
    expect(classifyFcmError(400, body('INVALID_ARGUMENT', [fcmDetail('INVALID_ARGUMENT'), tokenViolation]))).toMatchObject({
      kind: 'dead',
      guarded: true,
    });
    expect(classifyFcmError(400, body('INVALID_ARGUMENT', [tokenViolation]))).toMatchObject({ kind: 'dead', guarded: true });
    const otherField = { ...tokenViolation, fieldViolations: [{ field: 'message.android.ttl' }] };
    expect(classifyFcmError(400, body('INVALID_ARGUMENT', [fcmDetail('INVALID_ARGUMENT'), otherField]))).toMatchObject({ kind: 'misconfigured' });
    expect(classifyFcmError(400, body('INVALID_ARGUMENT', [], 'Invalid JSON payload received. Unknown name "ttl"'))).toMatchObject({
      kind: 'misconfigured',
    });
  });

  it('guards SENDER_ID_MISMATCH but not UNREGISTERED', () => {
    expect(classifyFcmError(403, body('PERMISSION_DENIED', [fcmDetail('SENDER_ID_MISMATCH')]))).toMatchObject({ kind: 'dead', guarded: true });
  });

  it('makes quota answers a rate limit of at least a minute, never a failure', () => {
    expect(classifyFcmError(429, body('RESOURCE_EXHAUSTED', [fcmDetail('QUOTA_EXCEEDED')]))).toEqual({
      kind: 'rate_limited',
      reason: 'FCM 429 QUOTA_EXCEEDED',
      minRetryMs: 60_000,
    });
    expect(classifyFcmError(429, body('RESOURCE_EXHAUSTED'))).toEqual({
      kind: 'rate_limited',
      reason: 'FCM 429 RESOURCE_EXHAUSTED',
      minRetryMs: 60_000,
    });
    expect(classifyFcmError(429, 'Too Many Requests')).toEqual({ kind: 'rate_limited', reason: 'FCM 429', minRetryMs: 60_000 });
  });

  it('sends SENDER_ID_MISMATCH through the prune breaker (guarded), never straight to a prune', () => {
    expect(classifyFcmError(403, body('PERMISSION_DENIED', [fcmDetail('SENDER_ID_MISMATCH')]))).toEqual({
      kind: 'dead',
      reason: 'FCM 403 SENDER_ID_MISMATCH',
      guarded: true,
    });
  });

  it('refreshes the token on a plain 401, but not on THIRD_PARTY_AUTH_ERROR', () => {
    expect(classifyFcmError(401, body('UNAUTHENTICATED'))).toMatchObject({ kind: 'refresh-token' });
    expect(classifyFcmError(401, undefined)).toMatchObject({ kind: 'refresh-token' });
    expect(classifyFcmError(401, body('UNAUTHENTICATED', [fcmDetail('THIRD_PARTY_AUTH_ERROR')]))).toMatchObject({ kind: 'misconfigured' });
  });

  it('falls back on the HTTP status for bodies it cannot read, and never prunes on them', () => {
    expect(classifyFcmError(500, undefined)).toEqual({ kind: 'failing', reason: 'FCM 500' });
    expect(classifyFcmError(503, '<html>')).toEqual({ kind: 'failing', reason: 'FCM 503' });
    expect(classifyFcmError(408, undefined)).toEqual({ kind: 'failing', reason: 'FCM 408' });
    for (const status of [400, 403, 404, 410, 413]) expect(classifyFcmError(status, { unrelated: true }).kind).toBe('misconfigured');
  });

  it('keeps unknown or hostile codes out of the table and out of the reason', () => {
    expect(classifyFcmError(404, body('NOT_FOUND', [fcmDetail('constructor')]))).toEqual({ kind: 'misconfigured', reason: 'FCM 404 NOT_FOUND' });
    expect(classifyFcmError(503, body('SOMETHING_NEW', [fcmDetail('__proto__')]))).toEqual({ kind: 'failing', reason: 'FCM 503' });
    expect(classifyFcmError(503, body('UNAVAILABLE', [fcmDetail('A_FUTURE_CODE')]))).toEqual({ kind: 'failing', reason: 'FCM 503 UNAVAILABLE' });
    expect(classifyFcmError(400, { error: { status: 42, details: 'no' } })).toEqual({ kind: 'misconfigured', reason: 'FCM 400' });
  });
});

/** Answers as FCM HTTP v1 gives them: Google API error bodies, with the FcmError detail where FCM adds one. */
export type FcmAnswer =
  | { readonly status: number; readonly body?: unknown; readonly headers?: Readonly<Record<string, string>> }
  /** Never answer (the request hangs until the client gives up or the server closes). */
  | { readonly hang: true };

/** A Google API error body: `{error: {code, message, status, details}}`. */
export function googleError(code: number, status: string, message: string, details: unknown[] = []): FcmAnswer {
  return { status: code, body: { error: { code, message, status, details } } };
}

/** HTTP status and google.rpc status FCM uses with each FcmError code. */
const fcmErrorStatus = {
  UNSPECIFIED_ERROR: [500, 'INTERNAL'],
  INVALID_ARGUMENT: [400, 'INVALID_ARGUMENT'],
  UNREGISTERED: [404, 'NOT_FOUND'],
  SENDER_ID_MISMATCH: [403, 'PERMISSION_DENIED'],
  QUOTA_EXCEEDED: [429, 'RESOURCE_EXHAUSTED'],
  UNAVAILABLE: [503, 'UNAVAILABLE'],
  INTERNAL: [500, 'INTERNAL'],
  THIRD_PARTY_AUTH_ERROR: [401, 'UNAUTHENTICATED'],
} as const;

export type FcmErrorCode = keyof typeof fcmErrorStatus;

/**
 * An FCM error as Google sends it: the FcmError detail with `errorCode`, and for
 * INVALID_ARGUMENT optionally a BadRequest field violation on `message.token` (Google's
 * answer to a malformed registration token).
 */
export function fcmError(
  errorCode: FcmErrorCode,
  options: { aboutToken?: boolean; headers?: Record<string, string>; message?: string } = {},
): FcmAnswer {
  const [code, status] = fcmErrorStatus[errorCode];
  const details: unknown[] = [{ '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError', errorCode }];
  if (options.aboutToken === true) {
    details.push({
      '@type': 'type.googleapis.com/google.rpc.BadRequest',
      fieldViolations: [{ field: 'message.token', description: 'Invalid registration token' }],
    });
  }
  const answer = googleError(code, status, options.message ?? 'Request contains an invalid argument.', details);
  return options.headers === undefined ? answer : { ...answer, headers: options.headers };
}

/** A Google API error with only the generic `status` (no FcmError detail). */
export function googleStatusError(code: number, status: string, headers?: Record<string, string>): FcmAnswer {
  const answer = googleError(code, status, `${status} (fake)`);
  return headers === undefined ? answer : { ...answer, headers };
}

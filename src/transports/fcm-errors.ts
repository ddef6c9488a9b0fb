/**
 * The one table of FCM HTTP v1 errors: what each answer means for the registration.
 *
 * FCM names an error twice: `error.details[]` may hold a
 * `type.googleapis.com/google.firebase.fcm.v1.FcmError` whose `errorCode` is specific
 * (UNREGISTERED, SENDER_ID_MISMATCH…), and `error.status` holds the generic google.rpc code
 * (NOT_FOUND, PERMISSION_DENIED…). We read `errorCode` first, else `status` (whichever the
 * table knows), else fall back on the HTTP status. Only two answers can delete a registration outright, and the
 * token-related 400/403 ones are "guarded": they go through the prune breaker (breaker.ts),
 * because a bug on our side produces them for every device at once.
 */
import { z } from 'zod';

export type FcmVerdict =
  /** `guarded`: only prune while the prune breaker is closed. */
  | { readonly kind: 'dead'; readonly reason: string; readonly guarded: boolean }
  | { readonly kind: 'failing'; readonly reason: string }
  /** A quota answer: back off (at least `minRetryMs`), never count it against the device. */
  | { readonly kind: 'rate_limited'; readonly reason: string; readonly minRetryMs: number }
  | { readonly kind: 'misconfigured'; readonly reason: string }
  /** Our OAuth token was refused: fetch a new one and send once more. */
  | { readonly kind: 'refresh-token'; readonly reason: string };

type Rule =
  | { readonly kind: 'dead'; readonly guarded: boolean }
  | { readonly kind: 'dead-if-about-token' }
  | { readonly kind: 'failing' }
  | { readonly kind: 'rate_limited' }
  | { readonly kind: 'misconfigured' }
  | { readonly kind: 'refresh-token' };

/** FCM asks for at least a minute of back-off after a quota answer. */
const quotaBackoffMs = 60_000;

const rules: Readonly<Record<string, Rule>> = {
  // ---- FcmError.errorCode ----
  // 404: the app instance is gone (uninstalled, data cleared, token rotated or expired).
  UNREGISTERED: { kind: 'dead', guarded: false },
  // 400: some request field is invalid. Proof of a dead token only when the violation names
  // `message.token`; otherwise it is our payload or configuration, and the answer would be
  // the same for every device — so no pruning, and no point retrying soon.
  INVALID_ARGUMENT: { kind: 'dead-if-about-token' },
  // 403: the token was minted for another Firebase project. Dead for us — unless *many*
  // tokens say so, which means our project id or service account is wrong: it goes through
  // the prune breaker, which stops pruning on it (and alerts) when it hits many devices.
  SENDER_ID_MISMATCH: { kind: 'dead', guarded: true },
  // 429: the project's or this device's quota is used up: back off ≥ 1 min, honour
  // Retry-After; a rate limit, never a failure of the device (never counted, never pruned).
  QUOTA_EXCEEDED: { kind: 'rate_limited' },
  // 503 / 500: FCM is overloaded or failed; retry with back-off, honour Retry-After. Counted
  // against the device only while FCM delivers to other tokens (the outage detector).
  UNAVAILABLE: { kind: 'failing' },
  INTERNAL: { kind: 'failing' },
  // 400/500 with no further information: nothing says the token is dead.
  UNSPECIFIED_ERROR: { kind: 'failing' },
  // 401: APNs or web-push credentials of the Firebase project are rejected: the operator's to fix.
  THIRD_PARTY_AUTH_ERROR: { kind: 'misconfigured' },

  // ---- error.status (google.rpc.Code), when no FcmError detail came ----
  // 401: our OAuth access token expired or was revoked early: refresh it once.
  UNAUTHENTICATED: { kind: 'refresh-token' },
  // 403: the service account may not send for this project (role missing, API disabled).
  PERMISSION_DENIED: { kind: 'misconfigured' },
  // 404 without UNREGISTERED: the project or the URL is wrong, not the token.
  NOT_FOUND: { kind: 'misconfigured' },
  // 429 in its generic spelling.
  RESOURCE_EXHAUSTED: { kind: 'rate_limited' },
  // 504 / 409: the request did not complete; trying again is safe (a duplicate wake collapses).
  DEADLINE_EXCEEDED: { kind: 'failing' },
  ABORTED: { kind: 'failing' },
};

/** Classifies a non-2xx answer of `messages:send` from its HTTP status and parsed JSON body. */
export function classifyFcmError(httpStatus: number, body: unknown): FcmVerdict {
  const error = parseError(body);
  // The first of errorCode and status the table knows. hasOwn: codes come from the network
  // ("constructor" must not find Object's), and only table codes go into the reason, so
  // reasons stay a closed, secret-free set.
  const known = [error?.errorCode, error?.status].find((code) => code !== undefined && Object.hasOwn(rules, code));
  const rule = known !== undefined ? rules[known]! : ruleForHttpStatus(httpStatus);
  const reason = `FCM ${httpStatus}${known !== undefined ? ` ${known}` : ''}`;
  switch (rule.kind) {
    case 'dead-if-about-token':
      return error?.aboutToken === true
        ? { kind: 'dead', reason: `${reason} (registration token)`, guarded: true }
        : { kind: 'misconfigured', reason: `${reason} (not about the token: our request is wrong)` };
    case 'dead':
      return { kind: 'dead', reason, guarded: rule.guarded };
    case 'rate_limited':
      return { kind: 'rate_limited', reason, minRetryMs: quotaBackoffMs };
    default:
      return { kind: rule.kind, reason };
  }
}

/** When the body names nothing we know (an HTML error page, a proxy): go by HTTP status. */
function ruleForHttpStatus(status: number): Rule {
  if (status === 401) return { kind: 'refresh-token' };
  if (status === 429) return { kind: 'rate_limited' };
  if (status >= 500 || status === 408) return { kind: 'failing' };
  // Any other 4xx: our request is wrong; never a reason to delete a registration.
  return { kind: 'misconfigured' };
}

const detailSchema = z
  .object({
    '@type': z.string(),
    errorCode: z.string().optional(),
    fieldViolations: z.array(z.object({ field: z.string().optional() }).passthrough()).optional(),
  })
  .passthrough();

const errorBodySchema = z.object({
  error: z
    .object({
      status: z.string().optional(),
      message: z.string().optional(),
      details: z.array(z.unknown()).optional(),
    })
    .passthrough(),
});

interface ParsedError {
  readonly errorCode: string | undefined;
  readonly status: string | undefined;
  readonly aboutToken: boolean;
}

function parseError(body: unknown): ParsedError | undefined {
  const parsed = errorBodySchema.safeParse(body);
  if (!parsed.success) return undefined;
  const details = (parsed.data.error.details ?? []).flatMap((entry) => {
    const detail = detailSchema.safeParse(entry);
    return detail.success ? [detail.data] : [];
  });
  const fcmError = details.find((d) => d['@type'].endsWith('google.firebase.fcm.v1.FcmError'));
  const tokenViolation = details.some(
    (d) => d['@type'].endsWith('google.rpc.BadRequest') && (d.fieldViolations ?? []).some((v) => v.field === 'message.token'),
  );
  return {
    errorCode: fcmError?.errorCode,
    status: parsed.data.error.status,
    // FCM's own wording for a malformed token, for answers that carry no field violation.
    aboutToken: tokenViolation || /registration token/i.test(parsed.data.error.message ?? ''),
  };
}

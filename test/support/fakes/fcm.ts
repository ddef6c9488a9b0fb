/**
 * A fake FCM HTTP v1 endpoint on loopback (use its `url` as FCM_ENDPOINT). Like Google it
 * answers 401 UNAUTHENTICATED to a bearer it does not accept and 404 to a wrong path; it
 * also answers 400 to any body that is not exactly the wake of contract §8 — and records
 * why in `problems`. A well-formed wake gets 200 `{name}` unless answers were scripted:
 *
 *   fcm.script(fcmError('UNREGISTERED'), { status: 503, headers: { 'retry-after': '7' } });
 *
 * Every request is in `received` (token, priority, bearer, raw body size), answered or not.
 */
import type { ServerResponse } from 'node:http';
import { z } from 'zod';
import { sendJson, startServer, type FakeRequest } from './server.js';

export type FcmAnswer =
  | { readonly status: number; readonly body?: unknown; readonly headers?: Readonly<Record<string, string>> }
  /** Never answer (the request hangs until the client gives up or the fake closes). */
  | { readonly hang: true };

export interface FcmRequestRecord {
  readonly path: string;
  readonly bearer: string | undefined;
  /** The registration token of a well-formed wake. */
  readonly token: string | undefined;
  readonly priority: 'HIGH' | 'NORMAL' | undefined;
  /** Body bytes as received on the wire. */
  readonly bodyBytes: number;
  readonly body: string;
  /** The status answered (undefined while hanging). */
  readonly answered: number | undefined;
}

export interface FakeFcm {
  /** The FCM_ENDPOINT to configure. */
  readonly url: string;
  readonly received: readonly FcmRequestRecord[];
  readonly problems: readonly string[];
  /** Answers the next well-formed, authorized wakes with these, in order. */
  script(...answers: FcmAnswer[]): void;
  close(): Promise<void>;
}

export interface FakeFcmOptions {
  readonly projectId: string;
  /** Whether a bearer token is currently valid (e.g. `oauth.isValid`). */
  readonly isAuthorized: (bearer: string) => boolean;
}

/** The wake of contract §8, and nothing else. */
const wakeSchema = z
  .object({
    message: z
      .object({
        token: z.string().min(1),
        data: z.object({ v: z.literal('1'), t: z.literal('wake') }).strict(),
        android: z
          .object({ priority: z.enum(['HIGH', 'NORMAL']), collapse_key: z.literal('wake'), ttl: z.literal('3600s') })
          .strict(),
      })
      .strict(),
  })
  .strict();

export async function startFakeFcm(options: FakeFcmOptions): Promise<FakeFcm> {
  const received: FcmRequestRecord[] = [];
  const problems: string[] = [];
  const scripted: FcmAnswer[] = [];
  const expectedPath = `/v1/projects/${options.projectId}/messages:send`;

  const server = await startServer((request, response) => {
    const bearer = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
    const body = request.body.toString('utf8');
    const wake = parseWake(body);
    const record = (answered: number | undefined): void =>
      void received.push({
        path: request.path,
        bearer,
        token: wake.success ? wake.data.message.token : undefined,
        priority: wake.success ? wake.data.message.android.priority : undefined,
        bodyBytes: request.body.length,
        body,
        answered,
      });

    const refusal = refuse(request, bearer, expectedPath, options, wake.success ? undefined : wake.problem);
    if (refusal !== undefined) {
      if (refusal.problem !== undefined) problems.push(refusal.problem);
      record('status' in refusal.answer ? refusal.answer.status : undefined);
      return answerWith(response, refusal.answer);
    }
    const answer = scripted.shift() ?? { status: 200, body: { name: `projects/${options.projectId}/messages/${received.length + 1}` } };
    record('hang' in answer ? undefined : answer.status);
    answerWith(response, answer);
  });

  return { url: server.url, received, problems, script: (...answers) => void scripted.push(...answers), close: server.close };
}

/** How Google would refuse this request (and what was wrong, when it is our client's bug). */
function refuse(
  request: FakeRequest,
  bearer: string | undefined,
  expectedPath: string,
  options: FakeFcmOptions,
  bodyProblem: string | undefined,
): { answer: FcmAnswer; problem?: string } | undefined {
  if (bearer === undefined || !options.isAuthorized(bearer)) {
    // Not a client bug by itself: tokens expire. The transport must refresh and resend.
    return { answer: googleError(401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials.') };
  }
  if (request.method !== 'POST' || request.path !== expectedPath) {
    return { answer: { status: 404, body: 'Not Found' }, problem: `${request.method} ${request.path}, expected POST ${expectedPath}` };
  }
  if (!(request.headers['content-type'] ?? '').startsWith('application/json')) {
    return { answer: googleError(400, 'INVALID_ARGUMENT', 'Invalid JSON payload received.'), problem: 'content-type is not application/json' };
  }
  if (bodyProblem !== undefined) {
    return { answer: googleError(400, 'INVALID_ARGUMENT', 'Invalid JSON payload received.'), problem: `body: ${bodyProblem}` };
  }
  return undefined;
}

function parseWake(body: string): { success: true; data: z.infer<typeof wakeSchema> } | { success: false; problem: string } {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return { success: false, problem: 'not JSON' };
  }
  const parsed = wakeSchema.safeParse(json);
  if (parsed.success) return { success: true, data: parsed.data };
  return { success: false, problem: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') };
}

function answerWith(response: ServerResponse, answer: FcmAnswer): void {
  if ('hang' in answer) return;
  if (typeof answer.body === 'string') {
    response.writeHead(answer.status, { 'content-type': 'text/plain', ...answer.headers }).end(answer.body);
    return;
  }
  sendJson(response, answer.status, answer.body ?? {}, { ...answer.headers });
}

/** A Google API error body: `{error: {code, message, status, details}}`. */
function googleError(code: number, status: string, message: string, details: unknown[] = []): FcmAnswer {
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

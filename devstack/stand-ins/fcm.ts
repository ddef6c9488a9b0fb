/**
 * A stand-in for the FCM HTTP v1 endpoint (use its URL as FCM_ENDPOINT). Like Google it
 * answers 401 UNAUTHENTICATED to a bearer it does not accept and 404 to a wrong path; it
 * also answers 400 to any body that is not exactly the wake of docs/design.md, Wakes on the wire — and records
 * why in `problems`. A well-formed wake gets 200 `{name}` unless answers were scripted:
 *
 *   fcm.script(fcmError('UNREGISTERED'), { status: 503, headers: { 'retry-after': '7' } });
 *
 * With `knownTokensOnly`, a token the inbox never minted is answered 404 UNREGISTERED, as
 * Google answers an uninstalled app; accepted wakes go to the inbox, where the simulated
 * phone picks them up. Every request is in `received` (token, priority, bearer, body size).
 */
import type { ServerResponse } from 'node:http';
import { z } from 'zod';
import { sendJson, startServer, type FakeRequest } from '../../simulator/loopback-server.js';
import { fcmError, googleError, type FcmAnswer } from './fcm-answers.js';
import { createFcmInbox, type FcmInbox } from './fcm-inbox.js';

export { fcmError, googleStatusError, type FcmAnswer, type FcmErrorCode } from './fcm-answers.js';

export interface FcmRequestRecord {
  /** When the request arrived. */
  readonly at: Date;
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

export interface FcmState {
  readonly received: readonly FcmRequestRecord[];
  readonly problems: readonly string[];
  /** Answers the next well-formed, authorized wakes with these, in order. */
  script(...answers: FcmAnswer[]): void;
  /** Answers every well-formed, authorized wake with this (after the scripted ones) until called with undefined: an outage. */
  answerAll(answer: FcmAnswer | undefined): void;
}

export interface FcmStandIn extends FcmState {
  readonly inbox: FcmInbox;
  handle(request: FakeRequest, response: ServerResponse): void;
}

export interface FakeFcm extends FcmState {
  /** The FCM_ENDPOINT to configure. */
  readonly url: string;
  close(): Promise<void>;
}

export interface FakeFcmOptions {
  readonly projectId: string;
  /** Whether a bearer token is currently valid (e.g. `oauth.isValid`). */
  readonly isAuthorized: (bearer: string) => boolean;
  /** Answer UNREGISTERED for tokens the inbox did not mint (the dev stack); tests accept any. */
  readonly knownTokensOnly?: boolean;
}

/** The wake (docs/design.md, Wakes on the wire), and nothing else. */
const wakeSchema = z
  .object({
    message: z
      .object({
        token: z.string().min(1),
        data: z.object({ v: z.literal('1'), t: z.literal('wake') }).strict(),
        android: z.object({ priority: z.enum(['HIGH', 'NORMAL']), collapse_key: z.literal('wake'), ttl: z.literal('3600s') }).strict(),
      })
      .strict(),
  })
  .strict();

type Wake = z.infer<typeof wakeSchema>;

export function createFcmStandIn(options: FakeFcmOptions): FcmStandIn {
  const received: FcmRequestRecord[] = [];
  const problems: string[] = [];
  const scripted: FcmAnswer[] = [];
  let always: FcmAnswer | undefined;
  const inbox = createFcmInbox();
  const expectedPath = `/v1/projects/${options.projectId}/messages:send`;

  const handle = (request: FakeRequest, response: ServerResponse): void => {
    const at = new Date();
    const bearer = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
    const body = request.body.toString('utf8');
    const wake = parseWake(body);
    const record = (answered: number | undefined): void =>
      void received.push({
        at,
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
    const data = (wake as { data: Wake }).data;
    const answer = scripted.shift() ?? always ?? accept(data, request.body.length, inbox, options, received.length + 1);
    record('hang' in answer ? undefined : answer.status);
    answerWith(response, answer);
  };
  return {
    received,
    problems,
    inbox,
    script: (...answers) => void scripted.push(...answers),
    answerAll: (answer) => void (always = answer),
    handle,
  };
}

/** The FCM endpoint alone on a loopback port (tests). */
export async function startFakeFcm(options: FakeFcmOptions): Promise<FakeFcm> {
  const { handle, inbox: _inbox, ...state } = createFcmStandIn(options);
  const server = await startServer(handle);
  return { ...state, url: server.url, close: server.close };
}

/** A wake Google would take: UNREGISTERED for an unknown token (when asked), else into the phone's inbox. */
function accept(wake: Wake, bytes: number, inbox: FcmInbox, options: FakeFcmOptions, sequence: number): FcmAnswer {
  const { token, android, data } = wake.message;
  if (options.knownTokensOnly === true && !inbox.isKnown(token)) return fcmError('UNREGISTERED', { message: 'Requested entity was not found.' });
  inbox.deliver(token, { priority: android.priority, collapse_key: android.collapse_key, ttl: android.ttl, data, request_bytes: bytes });
  return { status: 200, body: { name: `projects/${options.projectId}/messages/${sequence}` } };
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

function parseWake(body: string): { success: true; data: Wake } | { success: false; problem: string } {
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

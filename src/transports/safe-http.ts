/**
 * HTTP for attacker-chosen URLs (UnifiedPush endpoints), and the bounded POST both
 * transports use.
 *
 * The guarded agent enforces the address policy where it cannot be raced: on the connection
 * itself. Host names go through a connect-time `lookup` hook, so the address judged is the
 * address connected to (a second DNS answer cannot rebind it); IP-literal hosts never reach
 * `lookup`, so the connector judges them before dialling; and the connected socket's peer
 * address is judged once more, as a last line. A refusal is a `ForbiddenAddressError`, and no
 * TCP connection is ever opened to a refused address.
 *
 * `postWithDeadline` sends one request with a total deadline (connect + headers + body),
 * follows no redirect (undici's `request` never does), and reads at most `bodyCapBytes` of
 * the answer.
 */
import { promises as dns, type LookupAddress, type LookupOptions } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { Agent, buildConnector, request, type Dispatcher } from 'undici';
import { type AddressVerdict, judgeAddress } from './address-policy.js';

/** Resolves a host name to every address (tests inject one to point a name anywhere). */
export type Resolve = (hostname: string, family: number) => Promise<LookupAddress[]>;

const systemResolve: Resolve = (hostname, family) => dns.lookup(hostname, { all: true, family });

export class ForbiddenAddressError extends Error {
  readonly code = 'ERR_PUSH_FORBIDDEN_ADDRESS';
  constructor(
    /** Why the address policy refused (e.g. "loopback"): safe to log. */
    readonly verdict: string,
    /** The URL named the address itself (it can never become acceptable). */
    readonly literal: boolean,
  ) {
    super(`address policy refused the connection: ${verdict}`);
    this.name = 'ForbiddenAddressError';
  }
}

export interface GuardedAgentOptions {
  /** PUSH_UP_ALLOW_PRIVATE: connect anywhere (development). */
  readonly allowPrivate: boolean;
  /** Upper bound for connect, headers and body inactivity; the caller's deadline is the real limit. */
  readonly timeoutMs: number;
  readonly resolve?: Resolve;
}

/** An undici dispatcher that never connects to an address `judgeAddress` refuses (unless `allowPrivate`). */
export function createGuardedAgent(options: GuardedAgentOptions): Agent {
  const judge = options.allowPrivate ? allowAny : judgeAddress;
  const base = buildConnector({ timeout: options.timeoutMs, lookup: guardedLookup(options.resolve ?? systemResolve, judge) });
  const connect: buildConnector.connector = (target, callback) => {
    const literal = isIP(target.hostname) !== 0 ? judge(target.hostname) : undefined;
    if (literal !== undefined && !literal.allowed) {
      callback(new ForbiddenAddressError(literal.reason, true), null);
      return;
    }
    base(target, (error, socket) => {
      if (error !== null) return callback(error, null);
      const peer = socket.remoteAddress === undefined ? refusedUnknownPeer : judge(socket.remoteAddress);
      if (peer.allowed) return callback(null, socket);
      socket.destroy();
      callback(new ForbiddenAddressError(peer.reason, false), null);
    });
  };
  return new Agent({ headersTimeout: options.timeoutMs, bodyTimeout: options.timeoutMs, connect });
}

type Judge = (address: string) => AddressVerdict;
const allowAny: Judge = () => ({ allowed: true });
const refusedUnknownPeer: AddressVerdict = { allowed: false, reason: 'no peer address' };

/** A `net.connect` lookup that refuses the name when any address it resolves to is refused. */
function guardedLookup(resolve: Resolve, judge: Judge): LookupFunction {
  return (hostname: string, options: LookupOptions, callback) => {
    resolve(hostname, typeof options.family === 'number' ? options.family : 0).then(
      (addresses) => {
        const refused = addresses.map((a) => judge(a.address)).find((v) => !v.allowed);
        if (refused !== undefined && !refused.allowed) return callback(new ForbiddenAddressError(refused.reason, false), '', 0);
        const first = addresses[0];
        if (first === undefined) return callback(Object.assign(new Error(`no address for the host`), { code: 'ENOTFOUND' }), '', 0);
        if (options.all === true) return callback(null, addresses);
        callback(null, first.address, first.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, '', 0),
    );
  };
}

export interface PostOptions {
  readonly dispatcher: Dispatcher;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer | string;
  /** Total time for connect, request and response, after which the request is abandoned. */
  readonly deadlineMs: number;
  /** Response bytes read at most; the rest is never downloaded. */
  readonly bodyCapBytes: number;
  /** Aborts the request from outside (the send activity was cancelled). */
  readonly signal?: AbortSignal | undefined;
}

export interface PostAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** At most `bodyCapBytes`; possibly truncated or empty. */
  readonly body: Buffer;
}

/** Posts once. Resolves with the answer (any status); rejects on a network failure or the deadline. */
export async function postWithDeadline(url: string, options: PostOptions): Promise<PostAnswer> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DeadlineError(options.deadlineMs)), options.deadlineMs);
  try {
    const response = await request(url, {
      method: 'POST',
      dispatcher: options.dispatcher,
      headers: options.headers,
      body: options.body,
      signal: options.signal === undefined ? controller.signal : AbortSignal.any([controller.signal, options.signal]),
    });
    const body = await readCapped(response.body, options.bodyCapBytes);
    return { status: response.statusCode, headers: response.headers, body };
  } finally {
    clearTimeout(timer);
  }
}

export class DeadlineError extends Error {
  constructor(readonly ms: number) {
    super(`no answer within ${ms} ms`);
    this.name = 'DeadlineError';
  }
}

/** Reads up to `cap` bytes, then drops the connection; a body that fails midway is cut short. */
async function readCapped(body: Dispatcher.ResponseData['body'], cap: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= cap) break; // leaving the loop destroys the stream and its connection
    }
  } catch {
    // The status line already says what happened; the body is only a detail.
  }
  return Buffer.concat(chunks).subarray(0, cap);
}

/** A short, fixed description of a failed request: safe for logs and workflow histories. */
export function describeFailure(error: unknown): { readonly reason: string; readonly forbidden?: ForbiddenAddressError } {
  for (let cause: unknown = error, depth = 0; cause instanceof Error && depth < 5; cause = cause.cause, depth++) {
    if (cause instanceof ForbiddenAddressError) return { reason: `address refused: ${cause.verdict}`, forbidden: cause };
    const code = (cause as NodeJS.ErrnoException).code ?? '';
    if (cause instanceof DeadlineError || cause.name === 'TimeoutError' || code.endsWith('_TIMEOUT')) return { reason: 'timeout' };
    if (code === 'ECONNREFUSED') return { reason: 'connection refused' };
    if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'ENODATA') return { reason: 'host not found' };
    if (code === 'ECONNRESET' || code === 'EPIPE' || code === 'UND_ERR_SOCKET') return { reason: 'connection reset' };
    if (code.startsWith('ERR_TLS') || code.startsWith('ERR_SSL') || /CERT|SELF_SIGNED|VERIFY/.test(code)) return { reason: 'TLS failure' };
    if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return { reason: 'host unreachable' };
  }
  return { reason: 'network error' };
}

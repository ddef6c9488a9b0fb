/**
 * The api's one error tree. Handlers throw `ApiError`s; one middleware (app.ts) turns them into
 * the error JSON (docs/design.md, Device API). Anything else is a bug: logged, answered with a generic 500.
 */
export type ApiErrorCode =
  'invalid_request' | 'unauthorized' | 'not_found' | 'method_not_allowed' | 'payload_too_large' | 'unsupported_media_type' | 'rate_limited';

const statusOf: Readonly<Record<ApiErrorCode, number>> = {
  invalid_request: 400,
  unauthorized: 401,
  not_found: 404,
  method_not_allowed: 405,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
};

export class ApiError extends Error {
  readonly status: number;
  constructor(
    readonly code: ApiErrorCode,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
    this.name = 'ApiError';
    this.status = statusOf[code];
  }
}

/**
 * A client error raised by Koa or its helpers (http-errors with a 4xx `status` and
 * `expose: true`, e.g. a malformed header) as an `ApiError`, so it keeps the contract's JSON
 * shape; undefined for anything else, which stays a 500.
 */
export function fromHttpError(error: unknown): ApiError | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { status, expose } = error as { status?: unknown; expose?: unknown };
  if (typeof status !== 'number' || status < 400 || status > 499 || expose !== true) return undefined;
  const code = (Object.keys(statusOf) as ApiErrorCode[]).find((c) => statusOf[c] === status) ?? 'invalid_request';
  return new ApiError(code, code === 'invalid_request' ? 'bad request' : String((error as Error).message));
}

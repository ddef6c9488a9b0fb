/**
 * Reads a request body as one JSON value: JSON media type only, UTF-8 only, no content coding,
 * and a byte limit enforced while streaming (raw-body), so a client cannot make us buffer more
 * than `limitBytes` whatever its Content-Length says.
 */
import type Koa from 'koa';
import getRawBody from 'raw-body';
import { ApiError } from './errors.js';

export async function readJsonBody(ctx: Koa.Context, limitBytes: number): Promise<unknown> {
  checkMediaType(ctx);
  return parseJson(await readText(ctx, limitBytes));
}

/**
 * A body that may be left out: undefined when the request carries no bytes (no body, or an
 * empty one, whatever its headers say); otherwise as `readJsonBody`.
 */
export async function readOptionalJsonBody(ctx: Koa.Context, limitBytes: number): Promise<unknown> {
  if (ctx.request.length === 0 || (ctx.request.length === undefined && ctx.get('transfer-encoding') === '')) return undefined;
  const text = await readText(ctx, limitBytes);
  if (text === '') return undefined;
  checkMediaType(ctx);
  return parseJson(text);
}

function checkMediaType(ctx: Koa.Context): void {
  // The media type alone (not `ctx.is`, which answers null for an empty body).
  if (ctx.request.type.trim().toLowerCase() !== 'application/json') {
    throw new ApiError('unsupported_media_type', 'the body must be application/json');
  }
  const charset = ctx.request.charset;
  if (charset !== '' && charset.toLowerCase() !== 'utf-8' && charset.toLowerCase() !== 'utf8') {
    throw new ApiError('unsupported_media_type', 'the body must be UTF-8');
  }
  const coding = ctx.get('content-encoding').trim().toLowerCase();
  if (coding !== '' && coding !== 'identity') throw new ApiError('unsupported_media_type', 'content codings are not accepted');
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new ApiError('invalid_request', 'the body is not valid JSON');
  }
}

async function readText(ctx: Koa.Context, limitBytes: number): Promise<string> {
  try {
    return await getRawBody(ctx.req, { limit: limitBytes, length: ctx.get('content-length') || undefined, encoding: 'utf-8' });
  } catch (error) {
    const type = (error as { type?: unknown }).type;
    if (type === 'entity.too.large') {
      // The rest of the body is not worth reading: close the connection after answering.
      throw new ApiError('payload_too_large', `the body must be at most ${limitBytes} bytes`, { Connection: 'close' });
    }
    throw new ApiError('invalid_request', 'the body could not be read');
  }
}

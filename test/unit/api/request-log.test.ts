/**
 * The api's access log: one JSON line per request with its id, method, route template (never
 * the path, which holds ids), status and duration, the level as a label; the caller's
 * `X-Request-Id` is kept when plausible and echoed, anything else replaced by a fresh id.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import Router from '@koa/router';
import Koa from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestIdOf, requestLog } from '../../../src/api/request-log.js';
import { createLogger } from '../../../src/observability/log.js';

const lines: Array<Record<string, unknown>> = [];
let server: Server;
let url: string;

beforeAll(async () => {
  const log = createLogger(
    { level: 'debug', name: 'api' },
    new Writable({ write: (chunk: Buffer, _encoding, done) => void (lines.push(JSON.parse(chunk.toString())), done()) }),
  );
  const app = new Koa();
  app.use(requestLog(log));
  const router = new Router();
  router.get('/api/keys/devices/:device_id', (ctx) => void (ctx.status = 204));
  router.get('/healthz', (ctx) => void (ctx.body = { status: 'ok' }));
  app.use(router.routes());
  const handle = app.callback();
  server = createServer((req, res) => void handle(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

async function get(path: string, requestId?: string): Promise<{ status: number; requestId: string | null; line: Record<string, unknown> }> {
  const before = lines.length;
  const response = await fetch(`${url}${path}`, { headers: requestId === undefined ? {} : { 'x-request-id': requestId } });
  await response.arrayBuffer();
  expect(lines.length).toBe(before + 1);
  return { status: response.status, requestId: response.headers.get('x-request-id'), line: lines.at(-1)! };
}

describe('the access log', () => {
  it('logs the route template, never the path with its ids, and gives the request an id it echoes', async () => {
    const answer = await get('/api/keys/devices/phone-of-bob');
    expect(answer.status).toBe(204);
    expect(answer.requestId).toMatch(uuid);
    expect(answer.line).toMatchObject({
      level: 'info',
      msg: 'request',
      reqId: answer.requestId,
      method: 'GET',
      route: '/api/keys/devices/:device_id',
      status: 204,
    });
    expect(typeof answer.line.durationMs).toBe('number');
    expect(JSON.stringify(answer.line)).not.toContain('phone-of-bob');
  });

  it("keeps the caller's X-Request-Id when plausible, and replaces anything else", async () => {
    for (const given of ['f0e1d2c3-0000-4000-8000-000000000001', 'Root=1-67891233-abcdef012345678912345678', 'lb:7f3a/12+x==']) {
      const answer = await get('/healthz', given);
      expect(answer.requestId).toBe(given);
      expect(answer.line).toMatchObject({ reqId: given, route: '/healthz', level: 'debug' });
    }
    for (const given of ['x'.repeat(129), 'two words', '"quoted"', '<script>', '']) {
      const answer = await get('/healthz', given);
      expect(answer.requestId, JSON.stringify(given)).toMatch(uuid);
      expect(answer.line.reqId).toBe(answer.requestId);
    }
  });

  it('answers an unknown path as unmatched', async () => {
    const answer = await get('/api/push/nothing-here/12345');
    expect(answer.line).toMatchObject({ route: 'unmatched', status: 404 });
    expect(JSON.stringify(answer.line)).not.toContain('12345');
  });

  it('bounds the id: 128 characters at most', () => {
    expect(requestIdOf('a'.repeat(128))).toBe('a'.repeat(128));
    expect(requestIdOf('a'.repeat(129))).toMatch(uuid);
    expect(requestIdOf(undefined)).toMatch(uuid);
  });
});

/**
 * The small HTTP server under the simulator's distributor, the dev stack's FCM stand-in and
 * the test fakes: loopback and an ephemeral port by default, the whole request body read (up
 * to a limit), and a `close()` that also ends requests deliberately left unanswered (a hung
 * endpoint, a long poll). Plain Node, no framework.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeRequest {
  readonly method: string;
  /** Path and query, as sent. */
  readonly path: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: Buffer;
  readonly remoteAddress: string | undefined;
}

export type FakeHandler = (request: FakeRequest, response: ServerResponse) => void | Promise<void>;

export interface RunningServer {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  close(): Promise<void>;
}

const bodyLimit = 1024 * 1024;

export async function startServer(handler: FakeHandler, host = '127.0.0.1', port = 0): Promise<RunningServer> {
  const server = createServer((req, res) => {
    void readBody(req)
      .then(
        (body) =>
          handler({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body, remoteAddress: req.socket.remoteAddress }, res),
        () => res.writeHead(413).end(),
      )
      .catch(() => {
        if (!res.headersSent) res.writeHead(500).end();
      });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const bound = (server.address() as AddressInfo).port;
  const shownHost = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return {
    url: `http://${shownHost.includes(':') ? `[${shownHost}]` : shownHost}:${bound}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > bodyLimit) throw new Error('request body too large');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** Sends a JSON answer. */
export function sendJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), ...headers });
  response.end(text);
}

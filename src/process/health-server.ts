/**
 * The operations listener of the worker and the bridge: `GET /healthz` (up, and this release's
 * version), `GET /readyz` and `GET /metrics` (the api serves the same three on its own port).
 */
import { createServer, type Server } from 'node:http';
import { checkReadiness, reasonOf, type Check } from './health.js';
import type { Logger } from '../observability/log.js';
import { registry } from '../observability/metrics.js';
import { serviceVersion } from './version.js';

export interface OpsServer {
  readonly port: number;
  close(): Promise<void>;
}

export async function startOpsServer(host: string, port: number, checks: Readonly<Record<string, Check>>, log?: Logger): Promise<OpsServer> {
  const server: Server = createServer((req, res) => {
    const reply = (status: number, body: string, type = 'application/json') => {
      res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
      res.end(body);
    };
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') return reply(405, JSON.stringify({ error: 'method_not_allowed', message: 'GET only' }));
    if (path === '/healthz') return reply(200, JSON.stringify({ status: 'ok', version: serviceVersion }));
    if (path === '/readyz') {
      checkReadiness(checks, undefined, log).then(
        (r) => reply(r.ready ? 200 : 503, JSON.stringify({ status: r.ready ? 'ready' : 'not_ready', checks: r.checks })),
        // Not expected (a failing check is a 503 above), but never a request left unanswered
        // or a rejection that ends the process.
        (error: unknown) => {
          log?.error({ reason: reasonOf(error) }, 'readiness could not be checked');
          reply(500, JSON.stringify({ error: 'internal', message: 'readiness could not be checked' }));
        },
      );
      return;
    }
    if (path === '/metrics') {
      // Handled both ways: a failing collector must not leave a rejection that ends the process.
      registry.metrics().then(
        (text) => reply(200, text, registry.contentType),
        () => reply(500, JSON.stringify({ error: 'internal', message: 'metrics could not be collected' })),
      );
      return;
    }
    reply(404, JSON.stringify({ error: 'not_found', message: 'no such endpoint' }));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address !== null ? address.port : port,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** Free TCP ports on loopback for the dev stack and the tests. */
import { createServer } from 'node:net';

/** A port that was free a moment ago (bound to 0, then released). */
export function freePort(): Promise<number> {
  return tryPort(0);
}

/**
 * A free port below `limit` (the Temporal server stores membership ports as PostgreSQL
 * smallints, so they must stay under 32768 — below Linux's ephemeral range, where port 0 lands).
 */
export async function freePortBelow(limit: number, avoid: ReadonlySet<number> = new Set()): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const candidate = 20_000 + Math.floor(Math.random() * (limit - 20_000));
    if (avoid.has(candidate)) continue;
    const port = await tryPort(candidate).catch(() => undefined);
    if (port !== undefined) return port;
  }
  throw new Error(`no free port below ${limit}`);
}

function tryPort(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      const address = server.address();
      const bound = typeof address === 'object' && address !== null ? address.port : port;
      server.close(() => resolve(bound));
    });
  });
}

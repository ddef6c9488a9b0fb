/** Free TCP ports on loopback for the dev stack and the tests. */
import { createServer } from 'node:net';

/**
 * Linux hands out local ports for outgoing connections from 32768 up. A listener's port taken
 * from that range (by binding to port 0) can be reused by any client socket between our probe
 * and the daemon's bind, and the daemon then dies with "address in use"; ports below it are
 * only ever taken by listeners. The Temporal server also needs them there: it stores membership
 * ports as PostgreSQL smallints.
 */
const EPHEMERAL_RANGE_START = 32_768;
const LOWEST = 20_000;
/** Ports this process already handed out: two callers never get the same one. */
const handedOut = new Set<number>();

/** A port below the ephemeral range that was free a moment ago. */
export function freePort(): Promise<number> {
  return freePortBelow(EPHEMERAL_RANGE_START);
}

/** A free port in [20000, limit), none this process handed out before, none in `avoid`. */
export async function freePortBelow(limit: number, avoid: ReadonlySet<number> = new Set()): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const candidate = LOWEST + Math.floor(Math.random() * (limit - LOWEST));
    if (avoid.has(candidate) || handedOut.has(candidate)) continue;
    const port = await tryPort(candidate).catch(() => undefined);
    if (port === undefined) continue;
    handedOut.add(port);
    return port;
  }
  throw new Error(`no free port below ${limit}`);
}

function tryPort(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(port)));
  });
}

/**
 * Local servers that fail a client's connection in each way a peer can, for the tests of what
 * the processes then say: a TLS server that demands a client certificate from our CA (node:tls,
 * `requestCert`; it alerts "certificate required" when none is sent and closes without an alert
 * when it refuses the one sent), a peer that answers every ClientHello with a given TLS alert
 * (or closes),
 * one that accepts the TCP connection and never answers, and a port where nothing listens.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer as createTcpServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createServer as createTlsServer, type SecureVersion } from 'node:tls';
import { createCertificateAuthority, type CertificateAuthority, type IssuedCertificate } from '../../devstack/pki.js';
import { freePort } from '../../devstack/ports.js';

export interface Peer {
  readonly address: string;
  readonly port: number;
  close(): Promise<void>;
}

export interface Pki {
  readonly ca: CertificateAuthority;
  readonly server: IssuedCertificate;
  /** Issued by our CA, for client authentication. */
  readonly client: IssuedCertificate;
  /** A client certificate from a CA the server does not trust. */
  readonly foreign: IssuedCertificate;
  remove(): void;
}

export async function createPki(): Promise<Pki> {
  const dir = mkdtempSync(path.join(tmpdir(), 'tls-peers-'));
  const ca = await createCertificateAuthority(path.join(dir, 'ours'), 'ours');
  const other = await createCertificateAuthority(path.join(dir, 'other'), 'other');
  return {
    ca,
    server: await ca.issue('peer', { usage: 'server', dnsNames: ['localhost'], ips: ['127.0.0.1'] }),
    client: await ca.issue('client', { usage: 'client' }),
    foreign: await other.issue('intruder', { usage: 'client' }),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

async function listen(server: Server, sockets: Set<Socket>): Promise<Peer> {
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    address: `127.0.0.1:${port}`,
    port,
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A TLS server that requires a client certificate issued by `pki.ca`, answering nothing after. */
export function startCertificateDemandingPeer(pki: Pki, options: { readonly maxVersion?: SecureVersion } = {}): Promise<Peer> {
  const server = createTlsServer(
    {
      cert: pki.server.certPem,
      key: pki.server.keyPem,
      ca: pki.ca.caPem,
      requestCert: true,
      rejectUnauthorized: true,
      ALPNProtocols: ['h2'],
      ...(options.maxVersion === undefined ? {} : { maxVersion: options.maxVersion }),
    },
    (socket) => socket.on('error', () => undefined),
  );
  server.on('tlsClientError', () => undefined);
  return listen(server, new Set());
}

/** RFC 8446 alert codes this file's tests send. */
export const alerts = { badCertificate: 42, accessDenied: 49 } as const;

/**
 * What a protocol says before TLS starts: NATS greets with an INFO line that asks for TLS;
 * PostgreSQL answers the client's SSLRequest with "S".
 */
export interface Preamble {
  /** Written as soon as the client connects. */
  readonly greeting?: Buffer;
  /** Written in answer to the client's first bytes, which are not TLS. */
  readonly answer?: Buffer;
}

export const postgresPreamble: Preamble = { answer: Buffer.from('S') };
export const natsPreamble: Preamble = {
  greeting: Buffer.from(`INFO ${JSON.stringify({ server_id: 'peer', version: '2.10.0', proto: 1, tls_required: true, max_payload: 1_048_576 })}\r\n`),
};

/**
 * Answers every ClientHello with a fatal TLS alert (RFC 8446 §6: level 2, `alert`), or with
 * `'close'` closes the connection without one.
 */
export function startAlertingPeer(alert: number | 'close', preamble: Preamble = {}): Promise<Peer> {
  const record = alert === 'close' ? Buffer.alloc(0) : Buffer.from([0x15, 0x03, 0x03, 0x00, 0x02, 0x02, alert]);
  const server = createTcpServer((socket) => {
    socket.on('error', () => undefined);
    if (preamble.greeting !== undefined) socket.write(preamble.greeting);
    let answered = preamble.answer === undefined;
    socket.on('data', () => {
      if (answered) return void socket.end(record);
      answered = true;
      socket.write(preamble.answer!);
    });
  });
  return listen(server, new Set());
}

/** Accepts TCP connections and never says a word. */
export function startSilentPeer(): Promise<Peer> {
  return listen(
    createTcpServer((socket) => socket.on('error', () => undefined)),
    new Set(),
  );
}

/** An address where nothing listens (connections are refused). */
export async function closedAddress(): Promise<string> {
  return `127.0.0.1:${await freePort()}`;
}

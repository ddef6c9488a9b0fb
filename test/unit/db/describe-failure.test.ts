/**
 * What the processes say when PostgreSQL cannot be used, against real local peers: the TLS
 * handshake refused with the peer's alert, no answer at all; and an error that is none of
 * these (slonik's "Promise.withResolvers is not a function" on an old Node) named as itself, at
 * start and in readiness, never as "PostgreSQL is not answering".
 */
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkDatabase } from '../../../src/db/check.js';
import { describeDatabaseFailure } from '../../../src/db/describe-failure.js';
import type { DatabasePool } from '../../../src/db/pool.js';
import { openDatabase } from '../../../src/db/verify.js';
import { StartupError } from '../../../src/process/startup-error.js';
import {
  alerts,
  closedAddress,
  createPki,
  postgresPreamble,
  startAlertingPeer,
  startSilentPeer,
  type Peer,
  type Pki,
} from '../../support/tls-peers.js';

let pki: Pki;
const peers: Peer[] = [];
const log = pino({ level: 'silent' });

beforeAll(async () => {
  pki = await createPki();
});
afterAll(async () => {
  for (const peer of peers) await peer.close();
  pki?.remove();
});

async function started(peer: Promise<Peer>): Promise<Peer> {
  const running = await peer;
  peers.push(running);
  return running;
}

/** The start-up line of a process whose DATABASE_URL is `url`. */
async function startupLine(url: string): Promise<string> {
  return openDatabase(url, log).then(
    async (pool) => (await pool.end(), 'opened'),
    (error: unknown) => (error instanceof StartupError ? error.message : `not a StartupError: ${String(error)}`),
  );
}

describe('a PostgreSQL that cannot be used', () => {
  it('refuses our client certificate in the TLS handshake: the alert, and which settings to look at', async () => {
    const peer = await started(startAlertingPeer(alerts.badCertificate, postgresPreamble));
    const url = `postgres://push@${peer.address}/push?sslmode=verify-full&sslrootcert=${pki.ca.caFile}&sslcert=${pki.client.certFile}&sslkey=${pki.client.keyFile}`;
    expect(await startupLine(url)).toBe(
      'TLS handshake with PostgreSQL refused by the peer: alert bad certificate (it does not accept our client certificate: sslcert and sslkey in DATABASE_URL)',
    );
  });

  it('closes the connection in the TLS handshake without an alert: said so, and which settings to look at', async () => {
    const peer = await started(startAlertingPeer('close', postgresPreamble));
    const url = `postgres://push@${peer.address}/push?sslmode=verify-full&sslrootcert=${pki.ca.caFile}&sslcert=${pki.client.certFile}&sslkey=${pki.client.keyFile}`;
    expect(await startupLine(url)).toBe(
      'PostgreSQL closed the connection during the TLS handshake, without an alert (does it accept our client certificate? sslcert and sslkey in DATABASE_URL)',
    );
  });

  it('does not answer: no answer, timeout', async () => {
    const peer = await started(startSilentPeer());
    expect(await startupLine(`postgres://push@${peer.address}/push`)).toBe('PostgreSQL did not answer (timeout)');
  });

  it('is not listening: no answer, connection refused', async () => {
    expect(await startupLine(`postgres://push@${await closedAddress()}/push`)).toBe('PostgreSQL did not answer (connection refused)');
  });
});

describe('an error that is not about the connection', () => {
  const oldNode = new TypeError('Promise.withResolvers is not a function');

  it('is named as itself, and no waiting will fix it', () => {
    expect(describeDatabaseFailure(oldNode)).toEqual({ reason: 'unexpected TypeError: Promise.withResolvers is not a function', permanent: true });
  });

  it('fails the readiness check as itself', async () => {
    const pool = { query: () => Promise.reject(oldNode) } as unknown as DatabasePool;
    await expect(checkDatabase(pool)).rejects.toThrow(/^unexpected TypeError: Promise\.withResolvers is not a function$/);
  });
});

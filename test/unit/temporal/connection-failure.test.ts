/**
 * What the worker (at start) and the api and bridge (in readiness) say when the Temporal
 * frontend cannot be used, against real local peers: the line names what failed — the TLS
 * handshake and the peer's alert, a close without one, or no answer at all — instead of calling
 * every failure "unreachable (timeout)".
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TemporalSettings } from '../../../src/config/index.js';
import { StartupError } from '../../../src/process/startup-error.js';
import { createTemporalClient } from '../../../temporal/client.js';
import { connectWorker } from '../../../src/worker/temporal-worker.js';
import {
  alerts,
  closedAddress,
  createPki,
  startAlertingPeer,
  startCertificateDemandingPeer,
  startSilentPeer,
  type Peer,
  type Pki,
} from '../../support/tls-peers.js';

let pki: Pki;
const peers: Peer[] = [];

beforeAll(async () => {
  pki = await createPki();
});
afterAll(async () => {
  for (const peer of peers) await peer.close();
  pki?.remove();
});

const certificate = 'TEMPORAL_TLS_CERT_FILE and TEMPORAL_TLS_KEY_FILE';
type Settings = Pick<TemporalSettings, 'address' | 'tls'>;

function settings(address: string, client: 'none' | 'ours' | 'foreign'): Settings {
  const pair = client === 'none' ? undefined : client === 'ours' ? pki.client : pki.foreign;
  return {
    address,
    tls: {
      serverRootCACertificate: Buffer.from(pki.ca.caPem),
      ...(pair === undefined ? {} : { clientCertPair: { crt: Buffer.from(pair.certPem), key: Buffer.from(pair.keyPem) } }),
    },
  };
}

async function started(peer: Promise<Peer>): Promise<Peer> {
  const running = await peer;
  peers.push(running);
  return running;
}

/** The worker's start-up line (its StartupError), and the reason the api's and bridge's readiness logs. */
async function reasons(of: Settings): Promise<{ worker: string; readiness: string }> {
  const worker = await connectWorker(of, 2_000).then(
    async (connection) => (await connection.close(), 'connected'),
    (error: unknown) => (error instanceof StartupError ? error.message : `not a StartupError: ${String(error)}`),
  );
  const temporal = createTemporalClient({ ...of, namespace: 'default' });
  const readiness = await temporal.check(2_000).then(
    () => 'ready',
    (error: unknown) => (error as Error).message,
  );
  await temporal.close();
  return { worker, readiness };
}

describe('a Temporal frontend that cannot be used', () => {
  it('demands a client certificate and none is configured: the handshake was refused, with the alert', async () => {
    const peer = await started(startCertificateDemandingPeer(pki));
    const line = `TLS handshake with the Temporal frontend refused by the peer: alert certificate required (it requires a client certificate: ${certificate})`;
    expect(await reasons(settings(peer.address, 'none'))).toEqual({ worker: line, readiness: line });
  });

  it('refuses our client certificate with an alert: the alert, and that it is our certificate', async () => {
    const peer = await started(startAlertingPeer(alerts.badCertificate));
    const line = `TLS handshake with the Temporal frontend refused by the peer: alert bad certificate (it does not accept our client certificate: ${certificate})`;
    expect(await reasons(settings(peer.address, 'ours'))).toEqual({ worker: line, readiness: line });
  });

  it('speaks TLS 1.2 and demands a client certificate: its alert, handshake failure, names the certificate too', async () => {
    const peer = await started(startCertificateDemandingPeer(pki, { maxVersion: 'TLSv1.2' }));
    const line = `TLS handshake with the Temporal frontend refused by the peer: alert handshake failure (TLS 1.2's answer to a missing client certificate: ${certificate}; or no cipher in common)`;
    expect(await reasons(settings(peer.address, 'none'))).toEqual({ worker: line, readiness: line });
  });

  it('closes the connection on a client certificate from another CA, without an alert: said so, not "timeout"', async () => {
    const peer = await started(startCertificateDemandingPeer(pki));
    const line = `the Temporal frontend at ${peer.address} closed the connection during the TLS handshake, without an alert (does it accept our client certificate? ${certificate})`;
    expect(await reasons(settings(peer.address, 'foreign'))).toEqual({ worker: line, readiness: line });
  });

  it('accepts the connection and never answers: no answer to the handshake, and the worker does not wait forever', async () => {
    const peer = await started(startSilentPeer());
    const line = `the Temporal frontend at ${peer.address} did not answer our TLS handshake within 3000 ms`;
    expect(await reasons(settings(peer.address, 'ours'))).toEqual({ worker: line, readiness: line });
  });

  it('is not listening: no answer, connection refused', async () => {
    const address = await closedAddress();
    const line = `the Temporal frontend at ${address} did not answer (connection refused)`;
    expect(await reasons(settings(address, 'ours'))).toEqual({ worker: line, readiness: line });
    expect(await reasons({ address })).toEqual({ worker: line, readiness: line });
  });
});

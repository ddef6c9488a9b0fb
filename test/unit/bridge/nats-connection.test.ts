/**
 * What the bridge says at start when NATS cannot be used, against real local peers: the TLS
 * handshake refused with the peer's alert, or no answer at all.
 */
import { connect } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeNatsFailure, natsConnectionOptions } from '../../../src/bridge/nats-connection.js';
import type { NatsSettings } from '../../../src/config/index.js';
import { alerts, closedAddress, createPki, natsPreamble, startAlertingPeer, type Peer, type Pki } from '../../support/tls-peers.js';

let pki: Pki;
let peer: Peer | undefined;

beforeAll(async () => {
  pki = await createPki();
});
afterAll(async () => {
  await peer?.close();
  pki?.remove();
});

/** The reason the bridge stops with, for a connection to `address` with our client certificate. */
async function reason(address: string): Promise<string> {
  const settings: NatsSettings = {
    servers: [`nats://${address}`],
    auth: { kind: 'none' },
    tls: { ca: pki.ca.caPem, cert: pki.client.certPem, key: pki.client.keyPem },
  };
  // The bridge retries a lost connection forever; at start one attempt says what is wrong.
  const options = { ...natsConnectionOptions(settings, 'test'), maxReconnectAttempts: 0, reconnect: false, timeout: 3_000 };
  return connect(options).then(
    async (nc) => (await nc.close(), 'connected'),
    (error: unknown) => describeNatsFailure(error),
  );
}

describe('a NATS server that cannot be used', () => {
  it('refuses our client certificate in the TLS handshake: the alert, and which settings to look at', async () => {
    peer = await startAlertingPeer(alerts.badCertificate, natsPreamble);
    expect(await reason(peer.address)).toBe(
      'TLS handshake with NATS refused by the peer: alert bad certificate (it does not accept our client certificate: NATS_TLS_CERT_FILE and NATS_TLS_KEY_FILE)',
    );
  });

  it('is not listening: no answer, connection refused', async () => {
    expect(await reason(await closedAddress())).toBe('NATS did not answer (connection refused)');
  });
});

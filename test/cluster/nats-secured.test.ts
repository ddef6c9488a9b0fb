/**
 * The bridge against nats-servers that require TLS and credentials — user and
 * password, a token, and a `.creds` file (operator mode: a user JWT signed by its account, and
 * the nkey seed that proves it) — records what the chat server publishes; wrong credentials or
 * a certificate from another CA stop it at start with one line saying which.
 */
import path from 'node:path';
import { jetstream } from '@nats-io/jetstream';
import { connect, credsAuthenticator, type ConnectionOptions } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { waitFor } from '../../devstack/daemons.js';
import { createCertificateAuthority, type CertificateAuthority } from '../../devstack/pki.js';
import { stopDaemon } from '../../devstack/daemons.js';
import { findBinaries } from '../../devstack/tools.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { operatorAuth, startNatsServer, type NatsServer, type NatsServerAuth } from '../support/nats-servers.js';
import { freePort } from '../../devstack/ports.js';
import { serviceEnv, startProcess, waitReady } from '../support/processes.js';
import { conversation, recorded } from './nats-world.js';

const natsServerBin = findBinaries({}).natsServer;
let dir: string;
let db: TestDatabase;
let ca: CertificateAuthority;
const servers: NatsServer[] = [];

beforeAll(async () => {
  dir = path.join(inject('stackDir'), 'nats-secured');
  db = await freshDatabase();
  ca = await createCertificateAuthority(path.join(dir, 'pki'), 'nats');
});
afterAll(async () => {
  for (const server of servers) await stopDaemon(dir, server.daemon);
  await db?.drop();
});

interface Secured {
  readonly server: NatsServer;
  /** The bridge's variables for it. */
  readonly env: Record<string, string>;
  /** The same credentials for this test's own publisher. */
  readonly client: Partial<ConnectionOptions>;
}

async function securedServer(name: string, auth: NatsServerAuth, env: Record<string, string>, client: Partial<ConnectionOptions>): Promise<Secured> {
  const certificate = await ca.issue(`nats-${name}`, { usage: 'server', dnsNames: ['localhost'], ips: ['127.0.0.1'] });
  const server = await startNatsServer(natsServerBin, dir, { name, tls: certificate, auth });
  servers.push(server);
  return { server, env: { NATS_URL: server.url, NATS_TLS_CA_FILE: ca.caFile, ...env }, client: { ...client, tls: { ca: ca.caPem } } };
}

async function bridgeRecords(secured: Secured): Promise<void> {
  const port = await freePort();
  const bridge = startProcess(
    'bridge',
    serviceEnv(db.url, { ...secured.env, BRIDGE_METRICS_PORT: String(port), TEMPORAL_TASK_QUEUE: `nats-${port}` }),
  );
  const nc = await connect({ servers: secured.server.url, ...secured.client });
  try {
    await waitReady(`http://127.0.0.1:${port}`, bridge);
    const c = await conversation(db.pool);
    const events = [c.event(), c.event()];
    for (const event of events) await jetstream(nc).publish(`channel.${c.dm}.MESSAGE_CREATE`, JSON.stringify(event), { msgID: event.id });
    const ids = events.map((e) => e.id);
    await waitFor('the bridge to record both events', async () => (await recorded(db.pool, c, ids)).events === 2, 30_000);
    expect(await recorded(db.pool, c, ids)).toEqual({ events: 2, pendingMessages: 2 });
  } finally {
    await nc.close();
    expect(await bridge.stop(), bridge.output()).toBe(0);
  }
}

async function bridgeRefused(env: Record<string, string>): Promise<string> {
  const bridge = startProcess('bridge', serviceEnv(db.url, { ...env, BRIDGE_METRICS_PORT: String(await freePort()) }));
  const code = await new Promise((resolve) => {
    bridge.child.once('exit', resolve);
    setTimeout(() => resolve('still running after 30 s'), 30_000).unref();
  });
  expect(code, bridge.output()).toBe(1);
  return bridge.output();
}

describe('the bridge on secured NATS (TLS with a private CA, and credentials)', () => {
  it('user and password: records events; a wrong password stops it with one line', async () => {
    const secured = await securedServer(
      'userpass',
      { kind: 'user', user: 'push', password: 'correct horse' },
      { NATS_USER: 'push', NATS_PASSWORD: 'correct horse' },
      { user: 'push', pass: 'correct horse' },
    );
    await bridgeRecords(secured);
    expect(await bridgeRefused({ ...secured.env, NATS_PASSWORD: 'wrong' })).toBe('bridge: NATS refused our credentials (Authorization Violation)\n');
  });

  it('a token: records events; no token stops it with one line', async () => {
    const secured = await securedServer('token', { kind: 'token', token: 's3cr3t-token' }, { NATS_TOKEN: 's3cr3t-token' }, { token: 's3cr3t-token' });
    await bridgeRecords(secured);
    const { NATS_TOKEN: _, ...withoutToken } = secured.env;
    expect(await bridgeRefused(withoutToken)).toBe('bridge: NATS refused our credentials (Authorization Violation)\n');
  });

  it('a .creds file (operator mode, nkey): records events', async () => {
    const credsFile = path.join(dir, 'push.creds');
    const auth = await operatorAuth(credsFile);
    const secured = await securedServer(
      'creds',
      auth,
      { NATS_CREDS_FILE: credsFile },
      { authenticator: credsAuthenticator(readFileSync(credsFile)) },
    );
    await bridgeRecords(secured);
  });

  it('a server certificate from another CA stops the bridge with one line', async () => {
    const secured = await securedServer('other-ca', { kind: 'token', token: 't' }, { NATS_TOKEN: 't' }, { token: 't' });
    const other = await createCertificateAuthority(path.join(dir, 'pki-other'), 'other');
    const output = await bridgeRefused({ ...secured.env, NATS_TLS_CA_FILE: other.caFile });
    expect(output).toBe('bridge: TLS with NATS failed: the server certificate is not signed by the CA in NATS_TLS_CA_FILE\n');
  });
});

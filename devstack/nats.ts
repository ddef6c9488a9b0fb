/** nats-server with JetStream and a file store under the stack's dir. */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { startDaemon, waitFor } from './daemons.js';

export interface NatsOptions {
  readonly natsServer: string;
  readonly dir: string;
  readonly port: number;
}

export const natsDaemon = 'nats-server';

export async function startNats(options: NatsOptions): Promise<string> {
  const store = path.join(options.dir, 'nats');
  mkdirSync(store, { recursive: true });
  startDaemon(options.dir, {
    name: natsDaemon,
    command: options.natsServer,
    args: ['-a', '127.0.0.1', '-p', String(options.port), '-js', '-sd', store, '--server_name', 'zippchat-dev'],
  });
  const url = `nats://127.0.0.1:${options.port}`;
  await waitFor(`nats-server with JetStream on ${url}`, () => jetStreamReady(url), 30_000);
  return url;
}

async function jetStreamReady(url: string): Promise<boolean> {
  const nc = await connect({ servers: url, timeout: 1_000, reconnect: false });
  try {
    await (await jetstreamManager(nc)).getAccountInfo();
    return true;
  } finally {
    await nc.close();
  }
}

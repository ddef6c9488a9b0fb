/**
 * A three-node JetStream cluster with the host's stream replicated three times (R3).
 * The bridge knows all three servers; while the chat server publishes, the node leading the
 * stream is killed with SIGKILL and started again. Every event is recorded exactly once: none
 * lost (all in the ledger), none counted twice (the reader's pending count equals the events).
 */
import path from 'node:path';
import { jetstream, jetstreamManager, RetentionPolicy, StorageType } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { daemonPid, isAlive, stopDaemon, waitFor } from '../../devstack/daemons.js';
import { findBinaries } from '../../devstack/tools.js';
import { defaultStreamName, messageCreateSubjects } from '../../src/bridge/intake.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { startNatsServer, type NatsServer } from '../support/nats-servers.js';
import { freePort } from '../../devstack/ports.js';
import { serviceEnv, startProcess, waitReady, type RunningProcess } from '../support/processes.js';
import { conversation, recorded } from './nats-world.js';

const events = 150;
let dir: string;
let db: TestDatabase;
let nodes: NatsServer[];
let nc: NatsConnection;
let bridge: RunningProcess;
let bridgeUrl: string;

beforeAll(async () => {
  dir = path.join(inject('stackDir'), 'nats-cluster');
  db = await freshDatabase();
  const routes = [await freePort(), await freePort(), await freePort()];
  const natsServerBin = findBinaries({}).natsServer;
  nodes = [];
  for (const [i, port] of routes.entries())
    nodes.push(await startNatsServer(natsServerBin, dir, { name: `n${i + 1}`, cluster: { port, routes } }, { wait: false }));
  for (const node of nodes) node.launch();
  for (const node of nodes) await node.ready();
  const servers = nodes.map((n) => n.url);
  nc = await connect({ servers, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  // The host's stream, as a production chat server would create it: three replicas.
  const jsm = await jetstreamManager(nc);
  await waitFor(
    'the R3 stream',
    async () =>
      jsm.streams.add({
        name: defaultStreamName,
        subjects: [messageCreateSubjects()],
        num_replicas: 3,
        storage: StorageType.File,
        retention: RetentionPolicy.Limits,
      }),
    30_000,
  );
  const port = await freePort();
  bridgeUrl = `http://127.0.0.1:${port}`;
  bridge = startProcess(
    'bridge',
    serviceEnv(db.url, { NATS_URL: servers.join(','), BRIDGE_METRICS_PORT: String(port), TEMPORAL_TASK_QUEUE: `nats-cluster-${port}` }),
  );
  await waitReady(bridgeUrl, bridge);
});

afterAll(async () => {
  if (bridge !== undefined) expect(await bridge.stop(), bridge.output()).toBe(0);
  await nc?.close();
  for (const node of nodes ?? []) await stopDaemon(dir, node.daemon);
  await db?.drop();
});

describe('a three-node JetStream cluster with an R3 stream', () => {
  it('loses no event and counts none twice when the stream leader is killed mid-flow', async () => {
    const c = await conversation(db.pool);
    const js = jetstream(nc);
    const jsm = await jetstreamManager(nc);
    const ids: string[] = [];
    let killed = '';
    for (let i = 0; i < events; i++) {
      const event = c.event();
      ids.push(event.id);
      // As the chat server publishes: with a message id, again until JetStream acknowledges.
      await waitFor(
        `JetStream to acknowledge ${event.id}`,
        async () => js.publish(`channel.${c.dm}.MESSAGE_CREATE`, JSON.stringify(event), { msgID: event.id, timeout: 2_000 }),
        60_000,
      );
      if (i === 50) {
        const leader = (await jsm.streams.info(defaultStreamName)).cluster?.leader;
        const node = nodes.find((n) => n.name === leader);
        expect(node, `stream leader ${leader}`).toBeDefined();
        const pid = daemonPid(dir, node!.daemon)!;
        process.kill(pid, 'SIGKILL');
        await waitFor(`${node!.daemon} gone`, async () => !isAlive(pid), 10_000);
        killed = node!.name;
      }
      if (i === 90) await nodes.find((n) => n.name === killed)!.start();
    }
    await waitFor('every event recorded', async () => (await recorded(db.pool, c, ids)).events === events, 120_000);
    expect(await recorded(db.pool, c, ids)).toEqual({ events, pendingMessages: events });
    expect(bridge.child.exitCode, bridge.output()).toBeNull();
    expect((await fetch(`${bridgeUrl}/readyz`)).status).toBe(200);
  });
});

/**
 * A DM is not served after a big channel's fan-out: with the worker stopped, a message to a
 * 2,000-member server channel and then a DM reach the bridge; when the worker starts, the DM's
 * wake is among the first wakes sent. Real JetStream, PostgreSQL, Temporal dev server, worker
 * and UnifiedPush transport to a loopback distributor. An assertion on order, not on time.
 */
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { devicesFor, insertRegistrations, seedServer, seedUsers, type BenchDevice, type ServerWorld } from '../../../bench/seed.js';
import { startDistributor, type FakeDistributor } from '../../../simulator/distributor.js';
import type { EventBridge } from '../../../src/bridge/event-bridge.js';
import { defaultBacklogMs } from '../../../src/config/sections/pacing.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { startDevWorker, type DevWorker } from '../../support/dev-worker.js';
import { hostFixtures, nextId } from '../../support/host-fixtures.js';
import { bridgeHarness, messageEvent, pendingSignals, until, type BridgeHarness } from './harness.js';

const members = 2_000;
/** "Among the first": the DM's wake comes before this many of the channel's (today it came after all of them). */
const firstWakes = 100;

let db: TestDatabase;
let h: BridgeHarness;
let distributor: FakeDistributor;
let bridge: EventBridge | undefined;
let worker: DevWorker | undefined;
let world: ServerWorld;
let callee: BenchDevice;
let dmChannel: string;

beforeAll(async () => {
  db = await freshDatabase();
  h = await bridgeHarness();
  distributor = await startDistributor();
  world = await seedServer(db.pool, { members, channels: 1, distributor });
  callee = devicesFor(await seedUsers(db.pool, 1), distributor)[0]!;
  await insertRegistrations(db.pool, [...world.devices, callee]);
  dmChannel = await hostFixtures(db.pool).dm([world.ownerId, callee.userId]);
  // The production setting (BRIDGE_CHANNEL_BACKLOG_MS's default).
  bridge = await h.startReplica(db.pool, { channelBacklogMs: defaultBacklogMs });
});

afterAll(async () => {
  await bridge?.stop();
  await worker?.stop();
  await h?.close();
  await distributor?.close();
  await db?.drop();
});

/** Workflows the bridge's signal-with-starts have created on this file's task queue. */
const signalled = async () => (await h.temporal.workflow.count(`TaskQueue = '${h.taskQueue}'`)).count;

const pendingFor = (channelId: string) =>
  db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int4 AS n FROM push_pending WHERE channel_id = ${channelId}`);

/** Resolves once the bridge has started no workflow for `quietMs` (it signalled what it will signal without a worker). */
async function signallingSettled(quietMs = 2_000): Promise<void> {
  let last = await signalled();
  let since = Date.now();
  await until(
    'the bridge to stop signalling',
    async () => {
      const now = await signalled();
      if (now !== last) [last, since] = [now, Date.now()];
      return now > 0 && Date.now() - since >= quietMs;
    },
    60_000,
  );
}

describe('a DM behind a 2,000-device channel fan-out', () => {
  it('is among the first wakes when the worker starts', async () => {
    const channel = world.channelIds[0]!;
    await h.publish(messageEvent(channel, world.ownerId, nextId()));
    await until('the channel message recorded for every member', async () => (await pendingFor(channel)) === members, 60_000);
    await signallingSettled();

    await h.publish(messageEvent(dmChannel, world.ownerId, nextId()));
    await until('the DM signalled', async () => ((await pendingSignals(h.temporal, callee)) ?? 0) >= 1, 60_000);

    worker = await startDevWorker(db, { taskQueue: h.taskQueue });
    await until('the DM woken', async () => distributor.received.some((m) => m.endpoint === callee.endpoint), 80_000);

    const position = distributor.received.findIndex((m) => m.endpoint === callee.endpoint);
    expect(position, `the DM's wake came after ${position} of the channel's`).toBeLessThan(firstWakes);
    // Paced, not lost: the channel's members are woken too, every one of them.
    await until('every member woken', async () => distributor.received.length >= members + 1, 180_000);
    expect(new Set(distributor.received.map((m) => m.endpoint)).size).toBe(members + 1);
  }, 360_000);
});

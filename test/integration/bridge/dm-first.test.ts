/**
 * A DM is not served after a big channel's fan-out nor after a burst of registrations, with the
 * production pacing of the bridge's signaller. Two cases: with no worker running, the load and
 * then a DM arrive; when the worker starts, the DM is served among the first, and then all the
 * rest is too. A third, with the worker running throughout: many messages to a big channel,
 * then a DM and a 20-member server's message, both woken while the fan-out is still under way.
 * Real api, JetStream, PostgreSQL, Temporal dev server, worker and UnifiedPush transport to a
 * loopback distributor. Assertions on order and counts, not on time. The cases run one after
 * the other, each on its own database and task queue: side by side they would slow each other's
 * 2,000 workflows on the shared dev server.
 */
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { devicesFor, insertRegistrations, seedServer, seedUsers, type BenchDevice, type ServerWorld } from '../../../bench/seed.js';
import { startDistributor, type FakeDistributor } from '../../../simulator/distributor.js';
import type { EventBridge } from '../../../src/bridge/event-bridge.js';
import { defaultBacklogMs } from '../../../src/config/sections/pacing.js';
import { startTestApi, type TestApi } from '../../support/api.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { startDevWorker, type DevWorker } from '../../support/dev-worker.js';
import { hostFixtures, nextId } from '../../support/host-fixtures.js';
import { signDeviceToken, testJwtSecret } from '../../support/jwt.js';
import { bridgeHarness, messageEvent, pendingSignals, until, type BridgeHarness } from './harness.js';

const members = 2_000;
/** "Among the first": the DM's wake comes before this many of the channel's (today it came after all of them). */
const firstWakes = 100;

/** Phones registering at once (their workflows' starts owed, and paced by the signaller at its default). */
const phones = 2_000;
/** Requests at once: the api answers each once its registration and owed start committed. */
const concurrency = 64;
/** "Most": unpaced, every registration's workflow was started before the worker even ran. */
const startedBeforeDmAtMost = phones / 2;

/**
 * One case's world: a fresh database, a bridge harness on a task queue of its own, the loopback
 * distributor and the bridge at the production pacing (BRIDGE_SIGNAL_BACKLOG_MS's default); the
 * worker once the case starts it.
 */
interface Stack {
  readonly db: TestDatabase;
  readonly h: BridgeHarness;
  readonly distributor: FakeDistributor;
  readonly bridge: EventBridge;
  worker?: DevWorker;
}

async function startStack(): Promise<Stack> {
  const db = await freshDatabase();
  const h = await bridgeHarness();
  const distributor = await startDistributor();
  const bridge = await h.startReplica(db, { signalBacklogMs: defaultBacklogMs });
  return { db, h, distributor, bridge };
}

async function stopStack(stack: Stack | undefined): Promise<void> {
  await stack?.bridge.stop();
  await stack?.worker?.stop();
  await stack?.h.close();
  await stack?.distributor.close();
  await stack?.db.drop();
}

/** Workflows started on the case's task queue: by the bridge's signal-with-starts (a DM's, or its signaller's). */
const workflowsOn = async ({ h }: Stack) => (await h.temporal.workflow.count(`TaskQueue = '${h.taskQueue}'`)).count;

const woken = ({ distributor }: Stack, device: BenchDevice) => distributor.received.some((m) => m.endpoint === device.endpoint);

describe('a DM behind a 2,000-device channel fan-out', () => {
  let stack: Stack;
  let world: ServerWorld;
  let callee: BenchDevice;
  let dmChannel: string;

  beforeAll(async () => {
    stack = await startStack();
    const { db, distributor } = stack;
    world = await seedServer(db.pool, { members, channels: 1, distributor });
    callee = devicesFor(await seedUsers(db.pool, 1), distributor)[0]!;
    await insertRegistrations(db.pool, [...world.devices, callee]);
    dmChannel = await hostFixtures(db.pool).dm([world.ownerId, callee.userId]);
  });

  afterAll(() => stopStack(stack));

  const pendingFor = (channelId: string) =>
    stack.db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int4 AS n FROM push_pending WHERE channel_id = ${channelId}`);

  /** Resolves once the bridge has started no workflow for `quietMs` (it signalled what it will signal without a worker). */
  async function signallingSettled(quietMs = 2_000): Promise<void> {
    let last = await workflowsOn(stack);
    let since = Date.now();
    await until(
      'the bridge to stop signalling',
      async () => {
        const now = await workflowsOn(stack);
        if (now !== last) [last, since] = [now, Date.now()];
        return now > 0 && Date.now() - since >= quietMs;
      },
      60_000,
    );
  }

  it('is among the first wakes when the worker starts', async () => {
    const { db, h, distributor } = stack;
    const channel = world.channelIds[0]!;
    await h.publish(messageEvent(channel, world.ownerId, nextId()));
    await until('the channel message recorded for every member', async () => (await pendingFor(channel)) === members, 60_000);
    await signallingSettled();

    await h.publish(messageEvent(dmChannel, world.ownerId, nextId()));
    await until('the DM signalled', async () => ((await pendingSignals(h.temporal, callee)) ?? 0) >= 1, 60_000);

    stack.worker = await startDevWorker(db, { taskQueue: h.taskQueue });
    await until('the DM woken', async () => woken(stack, callee), 80_000);

    const position = distributor.received.findIndex((m) => m.endpoint === callee.endpoint);
    expect(position, `the DM's wake came after ${position} of the channel's`).toBeLessThan(firstWakes);
    // Paced, not lost: the channel's members are woken too, every one of them.
    await until('every member woken', async () => distributor.received.length >= members + 1, 300_000);
    expect(new Set(distributor.received.map((m) => m.endpoint)).size).toBe(members + 1);
  }, 480_000);
});

describe('a DM behind a burst of 2,000 registrations', () => {
  let stack: Stack;
  let api: TestApi;
  let callee: BenchDevice;
  let caller: string;
  let dmChannel: string;

  beforeAll(async () => {
    stack = await startStack();
    const { db, h, distributor } = stack;
    api = await startTestApi({
      db,
      taskQueue: h.taskQueue,
      env: { PUSH_UP_ALLOW_PRIVATE: 'true', PUSH_UP_ALLOW_HTTP: 'true' },
      // The bridge's signaller sends the registrations' starts, paced as in production.
      signaller: false,
      rateLimit: { perSecond: 10_000 },
      temporalDeadlineMs: 500,
    });
    const [calleeId, callerId] = await seedUsers(db.pool, 2);
    caller = callerId!;
    callee = devicesFor([calleeId!], distributor)[0]!;
    dmChannel = await hostFixtures(db.pool).dm([caller, callee.userId]);
  });

  afterAll(async () => {
    await api?.close();
    await stopStack(stack);
  });

  async function register(device: BenchDevice): Promise<number> {
    const token = await signDeviceToken({ userId: device.userId, deviceId: device.deviceId, secret: testJwtSecret });
    const body = {
      transport: 'unifiedpush',
      token: device.endpoint,
      p256dh: device.keys.p256dh.toString('base64url'),
      auth: device.keys.auth.toString('base64url'),
    };
    return (await api.request('PUT', '/api/push/registration', { token, body })).status;
  }

  async function registerAll(devices: readonly BenchDevice[]): Promise<number[]> {
    const statuses: number[] = [];
    for (let i = 0; i < devices.length; i += concurrency) statuses.push(...(await Promise.all(devices.slice(i, i + concurrency).map(register))));
    return statuses;
  }

  it("is woken before most of their workflows are started by the bridge's signaller, and every one is started after it", async () => {
    const { db, h, distributor } = stack;
    // seedUsers also signs each user in on a device named 'phone': the session the api checks.
    const devices = devicesFor(await seedUsers(db.pool, phones), distributor);
    const statuses = await registerAll([callee, ...devices]);
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    const beforeWorker = await workflowsOn(stack);
    expect(beforeWorker, 'workflows started while no worker took a task').toBeLessThan(startedBeforeDmAtMost);

    await h.publish(messageEvent(dmChannel, caller, nextId()));
    await until('the DM signalled', async () => ((await pendingSignals(h.temporal, callee)) ?? 0) >= 1, 60_000);

    stack.worker = await startDevWorker(db, { taskQueue: h.taskQueue });
    await until('the DM woken', async () => woken(stack, callee), 80_000);
    const atDm = await workflowsOn(stack);
    expect(atDm, 'registration workflows started by the time the DM was woken').toBeLessThan(startedBeforeDmAtMost);

    // Paced, not dropped: every registration gets its workflow (the callee's too).
    await until('every registration started', async () => (await workflowsOn(stack)) >= phones + 1, 240_000);
  }, 420_000);
});

describe("a DM and a small server's message after many messages to a big channel, the worker running", () => {
  /** Messages to the big channel before the DM: more than the bridge's in-flight slots (64). */
  const burst = 100;
  let stack: Stack;
  let big: ServerWorld;
  let small: ServerWorld;
  let callee: BenchDevice;
  let dmChannel: string;

  beforeAll(async () => {
    stack = await startStack();
    const { db, distributor } = stack;
    big = await seedServer(db.pool, { members, channels: 1, distributor });
    small = await seedServer(db.pool, { members: 20, channels: 1, distributor });
    callee = devicesFor(await seedUsers(db.pool, 1), distributor)[0]!;
    await insertRegistrations(db.pool, [...big.devices, ...small.devices, callee]);
    dmChannel = await hostFixtures(db.pool).dm([big.ownerId, callee.userId]);
    stack.worker = await startDevWorker(db, { taskQueue: stack.h.taskQueue });
  });

  afterAll(() => stopStack(stack));

  it('wakes both while the big channel still fans out', async () => {
    const { h, distributor } = stack;
    for (let i = 0; i < burst; i++) await h.publish(messageEvent(big.channelIds[0]!, big.ownerId, nextId()));
    await h.publish(messageEvent(dmChannel, big.ownerId, nextId()));
    await h.publish(messageEvent(small.channelIds[0]!, small.ownerId, nextId()));

    const bigEndpoints = new Set(big.devices.map((d) => d.endpoint));
    const smallEndpoints = new Set(small.devices.map((d) => d.endpoint));
    await until('every device woken', async () => new Set(distributor.received.map((m) => m.endpoint)).size >= members + 21, 400_000);
    const order = distributor.received.map((m) => m.endpoint);
    /** The big channel's wakes that came before position `i`. */
    const bigBefore = (i: number) => order.slice(0, i).filter((e) => bigEndpoints.has(e)).length;
    const dmAt = order.indexOf(callee.endpoint);
    const smallLastAt = Math.max(...[...smallEndpoints].map((e) => order.indexOf(e)));
    expect(bigBefore(dmAt), "the big channel's wakes before the DM's").toBeLessThan(members / 2);
    expect(bigBefore(smallLastAt), "the big channel's wakes before the small server's last").toBeLessThan(members / 2);
  }, 480_000);
});

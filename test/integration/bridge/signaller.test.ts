/**
 * The bridge's intake and its signaller, apart: a server channel's event is acknowledged once its
 * signals are owed, so the intake keeps reading however long they take to go out; and what one
 * replica's signaller did not send, another's finishes. Real JetStream, PostgreSQL and Temporal
 * dev server; no worker (what was signalled is read back from workflow histories).
 */
import { sql } from 'slonik';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { devicesFor, insertRegistrations, seedServer, seedUsers, type BenchDevice } from '../../../bench/seed.js';
import { startDistributor, type FakeDistributor } from '../../../simulator/distributor.js';
import type { EventBridge } from '../../../src/bridge/event-bridge.js';
import { headRegistrations, recordChannelEvents } from '../../../src/bridge/record-events.js';
import { signallerLockKeys } from '../../../src/bridge/signaller-lock.js';
import { defaultBacklogMs } from '../../../src/config/sections/pacing.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { hostFixtures, nextId } from '../../support/host-fixtures.js';
import { bridgeHarness, messageEvent, owedRows, pendingSignals, quickSignaller, until, type BridgeHarness } from './harness.js';

let db: TestDatabase;
let h: BridgeHarness;
let distributor: FakeDistributor;

beforeAll(async () => {
  h = await bridgeHarness();
  distributor = await startDistributor();
});

afterAll(async () => {
  await h.close();
  await distributor.close();
});

// Each case on a database of its own: what one left owed is not the next one's.
beforeEach(async () => {
  db = await freshDatabase();
});

const running: EventBridge[] = [];
afterEach(async () => {
  for (const replica of running.splice(0)) await replica.stop();
  await db.drop();
});

async function replica(options: Parameters<BridgeHarness['startReplica']>[1] = {}): Promise<EventBridge> {
  const started = await h.startReplica(db, options);
  running.push(started);
  return started;
}

async function stopReplica(bridge: EventBridge): Promise<void> {
  running.splice(running.indexOf(bridge), 1);
  await bridge.stop();
}

/** Workflows started on this file's task queue. */
const workflows = async () => (await h.temporal.workflow.count(`TaskQueue = '${h.taskQueue}'`)).count;

/** How far the furthest owed row has been sent (its signals accepted, in order); 0 before one is written. */
async function sentOfFurthestRow(): Promise<number> {
  return db.pool.oneFirst(sql.type(z.object({ sent: z.number() }))`SELECT COALESCE(max(sent), 0)::int4 AS sent FROM push_signal_outbox`);
}

/** Registrations the outbox still owes a signal. */
async function owedRegistrations(): Promise<number> {
  return db.pool.oneFirst(
    sql.type(z.object({ n: z.number() }))`SELECT COALESCE(sum(cardinality(registration_ids) - sent), 0)::int4 AS n FROM push_signal_outbox`,
  );
}

/** `pending` signals each device's workflow received (0 for none). */
async function signalsOf(devices: readonly BenchDevice[]): Promise<number[]> {
  const counts: number[] = [];
  for (let i = 0; i < devices.length; i += 50) {
    counts.push(...(await Promise.all(devices.slice(i, i + 50).map(async (d) => (await pendingSignals(h.temporal, d)) ?? 0))));
  }
  return counts;
}

describe('the intake keeps reading while signals wait', () => {
  it('fetches and signals a DM while more channel events than its slots wait for their signals to go out', async () => {
    const slots = 8;
    const channels = 3 * slots;
    const servers = [];
    for (let i = 0; i < channels; i++) servers.push(await seedServer(db.pool, { members: 30, channels: 1, distributor }));
    await insertRegistrations(
      db.pool,
      servers.flatMap((s) => s.devices),
    );
    const [caller, callee] = await seedUsers(db.pool, 2);
    const calleeDevice = devicesFor([callee!], distributor)[0]!;
    await insertRegistrations(db.pool, [calleeDevice]);
    const dm = await hostFixtures(db.pool).dm([caller!, callee!]);

    // Paced as in production, and no worker: after its first window the pacer waits for the
    // workers' backlog to shrink, which it never does here. The channels' signals wait owed.
    const bridge = await replica({ maxInFlight: slots, signalBacklogMs: defaultBacklogMs });
    await until('its signaller to lead', async () => bridge.signaller.leading);
    for (const server of servers) await h.publish(messageEvent(server.channelIds[0]!, server.ownerId, nextId()));
    await h.publish(messageEvent(dm, caller!, nextId()));

    await until('the DM signalled', async () => ((await pendingSignals(h.temporal, calleeDevice)) ?? 0) >= 1, 60_000);
    await until('every event acknowledged', () => h.consumerIdle(), 60_000);
    // The channels' signals are not all out — the pacer holds them — yet no event waits for them.
    expect(await owedRows(db.pool)).toBeGreaterThan(0);
    expect(await workflows()).toBeLessThan(channels * 30);
  }, 180_000);
});

describe('small messages behind fan-outs larger than the budget', () => {
  it("a small server's message is sent before the second fan-out starts, though the first fills the signaller's budget", async () => {
    // Two fan-outs (each a head row of 256 and a tail row of 44), then a 5-member server's
    // message, owed in that order before any signaller runs. The budget holds one head row.
    const fanOuts = [
      await seedServer(db.pool, { members: 300, channels: 1, distributor }),
      await seedServer(db.pool, { members: 300, channels: 1, distributor }),
    ];
    const small = await seedServer(db.pool, { members: 5, channels: 1, distributor });
    const registrations = [];
    for (const world of [...fanOuts, small]) registrations.push(await insertRegistrations(db.pool, world.devices));
    for (const world of [...fanOuts, small])
      await recordChannelEvents(db.pool, world.channelIds[0]!, [
        { messageId: nextId(), channelId: world.channelIds[0]!, authorId: world.ownerId, createdAt: new Date() },
      ]);

    await replica({ signalConcurrency: 1, signaller: { ...quickSignaller, maxLoaded: 100 } });
    await until('every device of the small server signalled', async () => (await signalsOf(small.devices)).every((n) => n >= 1), 120_000);
    // The second fan-out's head: its first 256 registrations by id.
    const secondIds = registrations[1]!;
    const head = new Set([...secondIds].sort((a, b) => Number(a) - Number(b)).slice(0, headRegistrations));
    const secondHead = fanOuts[1]!.devices.filter((_, i) => head.has(secondIds[i]!));
    expect(secondHead).toHaveLength(headRegistrations);
    expect((await signalsOf(secondHead)).filter((n) => n > 0)).toEqual([]);
  }, 180_000);
});

describe('another replica finishes what one did not send', () => {
  const members = 1_500;
  /** Signals the row's progress may be behind by when its replica stops: a naming chunk and those in flight. */
  const chunk = 50;
  const concurrency = 2;

  async function bigChannelOwed() {
    const world = await seedServer(db.pool, { members, channels: 1, distributor });
    await insertRegistrations(db.pool, world.devices);
    return world;
  }

  it('when the sending replica stops part way through a fan-out', async () => {
    const world = await bigChannelOwed();
    const slow = { signalConcurrency: concurrency, signaller: { ...quickSignaller, namingChunk: chunk } };
    const first = await replica(slow);
    await until('the first replica to lead', async () => first.signaller.leading);
    const second = await replica({ signaller: { ...quickSignaller, namingChunk: chunk } });
    await h.publish(messageEvent(world.channelIds[0]!, world.ownerId, nextId()));
    await until('part of the fan-out signalled', async () => (await sentOfFurthestRow()) >= members / 5, 180_000);
    await stopReplica(first);
    // The rows stay (the head's and the tail's: record-events.ts), advanced as far as their signals were accepted.
    expect(await owedRegistrations()).toBeGreaterThan(0);

    await until('the second replica to lead', async () => second.signaller.leading);
    await until('nothing owed', async () => (await owedRows(db.pool)) === 0, 240_000);
    const signals = await signalsOf(world.devices);
    expect(signals.filter((n) => n === 0)).toEqual([]);
    // Resumed where the first left off: at most a chunk and what was in flight again.
    expect(signals.filter((n) => n > 1).length).toBeLessThanOrEqual(chunk + concurrency);
  }, 480_000);

  it("when the sending replica's lock session ends under it", async () => {
    const world = await bigChannelOwed();
    const slow = { signalConcurrency: concurrency, signaller: { ...quickSignaller, namingChunk: chunk } };
    const first = await replica(slow);
    await until('the first replica to lead', async () => first.signaller.leading);
    await replica({ signaller: { ...quickSignaller, namingChunk: chunk } });
    await h.publish(messageEvent(world.channelIds[0]!, world.ownerId, nextId()));
    await until('part of the fan-out signalled', async () => (await sentOfFurthestRow()) >= members / 5, 180_000);
    // An operator's pg_terminate_backend, a network cut: the lock's session is gone.
    const [classid, objid] = signallerLockKeys;
    const ended = await db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(pg_terminate_backend(pid))::int4 AS n FROM pg_locks
      WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
        AND classid = ${classid} AND objid = ${objid} AND objsubid = 2 AND granted`);
    expect(ended).toBe(1);
    await until('nothing owed', async () => (await owedRows(db.pool)) === 0, 240_000);
    expect((await signalsOf(world.devices)).filter((n) => n === 0)).toEqual([]);
  }, 480_000);
});

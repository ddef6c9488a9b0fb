/**
 * Every event counted exactly once, and every signal it owes sent: across bridge restarts,
 * republished events, two replicas on one consumer, a DM's first delivery whose signals failed,
 * and a server channel's signals that Temporal refused for a while.
 */
import { Client } from '@temporalio/client';
import { sql } from 'slonik';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { EventBridge } from '../../../src/bridge/event-bridge.js';
import { VIEW_CHANNEL } from '../../../src/permissions/flags.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { hostFixtures, nextId, type HostFixtures, type Registration } from '../../support/host-fixtures.js';
import {
  bridgeHarness,
  messageEvent,
  outcomeCount,
  pendingRows,
  owedRows,
  pendingSignals,
  until,
  type BridgeHarness,
  type MessageEventBody,
} from './harness.js';

let db: TestDatabase;
let h: BridgeHarness;
let host: HostFixtures;
let author: string;
let reader: Registration;
let server: string;

beforeAll(async () => {
  db = await freshDatabase();
  h = await bridgeHarness();
  host = hostFixtures(db.pool);
  const [owner, a, r] = await host.users(3);
  author = a!;
  server = await host.server({ owner: owner!, everyone: VIEW_CHANNEL, members: [author, r!] });
  reader = await host.registration(r!);
});

afterAll(async () => {
  await h.close();
  await db.drop();
});

const running: EventBridge[] = [];
afterEach(async () => {
  for (const replica of running.splice(0)) await replica.stop();
});

async function replica(options: Parameters<BridgeHarness['startReplica']>[1] = {}): Promise<EventBridge> {
  const started = await h.startReplica(db, options);
  running.push(started);
  return started;
}

/** A client of the test Temporal server for a namespace that does not exist: every signal is refused. */
const brokenTemporal = () => new Client({ connection: h.temporal.connection, namespace: `no-such-namespace-${nextId()}` });

function events(channelId: string, count: number): MessageEventBody[] {
  return Array.from({ length: count }, () => messageEvent(channelId, author, nextId()));
}

async function readerRow(channelId: string) {
  return (await pendingRows(db.pool, channelId)).find((r) => r.registration_id === reader.id);
}

const ledgerSize = async (ids: readonly string[]) =>
  db.pool.oneFirst(
    sql.type(z.object({ n: z.number() }))`SELECT count(*)::int4 AS n FROM push_processed_events WHERE message_id = ANY(${sql.array(ids, 'int8')})`,
  );

describe('exactly once', () => {
  it('events published while the bridge is stopped are processed when it returns, each counted once', async () => {
    const channel = await host.channel(server);
    const batch = events(channel, 60);
    const first = await replica({ maxInFlight: 4 });
    for (const event of batch.slice(0, 30)) await h.publish(event);
    await until('the first events to be recorded', async () => ((await readerRow(channel))?.message_count ?? 0) > 0);
    await first.stop(); // mid-stream: some of the first 30 may not have been taken yet
    running.splice(running.indexOf(first), 1);
    for (const event of batch.slice(30)) await h.publish(event);

    await replica({ maxInFlight: 4 });
    await until('every event recorded', async () => (await h.consumerIdle()) && (await readerRow(channel))?.message_count === 60);
    expect(await readerRow(channel)).toMatchObject({ message_count: 60, first_message_id: batch[0]!.id, last_message_id: batch[59]!.id });
    expect(await ledgerSize(batch.map((e) => e.id))).toBe(60);
  });

  it('the same event published twice is counted once', async () => {
    const channel = await host.channel(server);
    const [event] = events(channel, 1);
    const duplicatesBefore = await outcomeCount('duplicate');
    await replica();
    await h.publish(event!);
    await h.publish(event!);
    await until('both copies handled', async () => (await h.consumerIdle()) && (await outcomeCount('duplicate')) > duplicatesBefore);
    expect(await readerRow(channel)).toMatchObject({ message_count: 1, first_message_id: event!.id, last_message_id: event!.id });
  });

  it('two replicas on one consumer, every event published twice: each counted once, first and last exact', async () => {
    const channels = [await host.channel(server), await host.channel(server), await host.channel(server)];
    const perChannel = channels.map((c) => events(c, 40));
    await replica({ maxInFlight: 8 });
    await replica({ maxInFlight: 8 });
    // Interleave channels and copies so both replicas handle copies of one event at once.
    for (let i = 0; i < 40; i++) {
      for (const list of perChannel) await h.publish(list[i]!);
      for (const list of perChannel) await h.publish(list[i]!);
    }
    await until('every copy handled', async () => {
      if (!(await h.settled(db))) return false;
      const rows = await Promise.all(channels.map(readerRow));
      return rows.every((row) => row?.message_count === 40);
    });
    for (const [i, channel] of channels.entries()) {
      expect(await readerRow(channel)).toMatchObject({
        message_count: 40,
        first_message_id: perChannel[i]![0]!.id,
        last_message_id: perChannel[i]![39]!.id,
      });
    }
    expect(await ledgerSize(perChannel.flat().map((e) => e.id))).toBe(120);
  });

  it("a DM's first delivery whose signals failed is redelivered: counted once, and the signal is sent", async () => {
    const [caller, callee] = await host.users(2);
    const channel = await host.dm([caller!, callee!]);
    const device = await host.registration(callee!);
    const row = async () => (await pendingRows(db.pool, channel)).find((r) => r.registration_id === device.id);
    const [event] = events(channel, 1).map((e) => ({ ...e, author_id: caller! }));
    const failedBefore = await outcomeCount('failed');
    // Temporal refuses every signal to a namespace that does not exist.
    const failing = await replica({ temporal: brokenTemporal() });
    await h.publish(event!);
    await until('the failed attempt', async () => (await outcomeCount('failed')) > failedBefore);
    expect(await row()).toMatchObject({ message_count: 1 }); // rows are committed before signalling
    expect(await pendingSignals(h.temporal, device)).toBeUndefined();
    await failing.stop();
    running.splice(running.indexOf(failing), 1);

    await replica();
    await until('the redelivery to signal the device', async () => (await h.consumerIdle()) && (await pendingSignals(h.temporal, device)) === 1);
    expect(await row()).toMatchObject({ message_count: 1, first_message_id: event!.id });
  });

  it("a server channel's signals that Temporal refuses stay owed: the event is acknowledged once, and another replica sends them", async () => {
    const channel = await host.channel(server);
    const newcomer = await host.user();
    await host.member(server, newcomer);
    const device = await host.registration(newcomer);
    const [event] = events(channel, 1);
    const countedBefore = await outcomeCount('counted');
    const failing = await replica({ temporal: brokenTemporal() });
    await until('its signaller to lead', async () => failing.signaller.leading);
    await h.publish(event!);
    await until('the event acknowledged', async () => (await h.consumerIdle()) && (await outcomeCount('counted')) > countedBefore);
    expect(await owedRows(db.pool)).toBe(1);
    expect(await pendingSignals(h.temporal, device)).toBeUndefined();

    await replica(); // a standby: the failing one still holds the lock, and keeps trying
    await failing.stop();
    running.splice(running.indexOf(failing), 1);
    await until('the signal sent and nothing owed', async () => (await h.settled(db)) && (await pendingSignals(h.temporal, device)) === 1);
    expect(await outcomeCount('counted')).toBe(countedBefore + 1);
  });
});

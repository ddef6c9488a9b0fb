/**
 * Where the bridge's durable consumer starts: a consumer created now starts at
 * new messages (or a configured start time), so the host stream's backlog wakes nobody; an
 * existing one resumes where it was; and the bridge says at start when the stream keeps
 * messages longer than the exactly-once ledger keeps their ids.
 */
import { jetstreamManager, RetentionPolicy, StorageType } from '@nats-io/jetstream';
import { sql } from 'slonik';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { processedEventRetentionMs } from '../../../domain/retention.js';
import { ledgerOutlivesStream, type EventBridge } from '../../../src/bridge/event-bridge.js';
import { messageCreateSubjects } from '../../../src/bridge/intake.js';
import { VIEW_CHANNEL } from '../../../src/permissions/flags.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { hostFixtures, nextId, type HostFixtures, type Registration } from '../../support/host-fixtures.js';
import { bridgeHarness, capturedLogger, messageEvent, pendingRows, until, type BridgeHarness, type MessageEventBody } from './harness.js';

let db: TestDatabase;
let host: HostFixtures;
let author: string;
let reader: Registration;
let server: string;

beforeAll(async () => {
  db = await freshDatabase();
  host = hostFixtures(db.pool);
  const [owner, a, r] = await host.users(3);
  author = a!;
  server = await host.server({ owner: owner!, everyone: VIEW_CHANNEL, members: [author, r!] });
  reader = await host.registration(r!);
});

afterAll(async () => {
  await db.drop();
});

const harnesses: BridgeHarness[] = [];
const running: EventBridge[] = [];
afterEach(async () => {
  for (const replica of running.splice(0)) await replica.stop();
  for (const h of harnesses.splice(0)) await h.close();
});

/** Its own subjects, stream and consumer: a NATS account as a bridge meets it for the first time. */
async function harness(): Promise<BridgeHarness> {
  const h = await bridgeHarness();
  harnesses.push(h);
  return h;
}

async function replica(h: BridgeHarness, options: Parameters<BridgeHarness['startReplica']>[1] = {}): Promise<EventBridge> {
  const started = await h.startReplica(db, options);
  running.push(started);
  return started;
}

async function stop(bridge: EventBridge): Promise<void> {
  running.splice(running.indexOf(bridge), 1);
  await bridge.stop();
}

function events(channelId: string, count: number): MessageEventBody[] {
  return Array.from({ length: count }, () => messageEvent(channelId, author, nextId()));
}

const readerRow = async (channelId: string) => (await pendingRows(db.pool, channelId)).find((r) => r.registration_id === reader.id);
const ledgerHas = async (ids: readonly string[]) =>
  db.pool.oneFirst(
    sql.type(z.object({ n: z.number() }))`SELECT count(*)::int4 AS n FROM push_processed_events WHERE message_id = ANY(${sql.array(ids, 'int8')})`,
  );

/** What the bridge logged, parsed. */
const logged = (lines: () => string[]) => lines().map((l) => JSON.parse(l) as Record<string, unknown> & { msg: string; level: number });

describe('where the bridge consumer starts', () => {
  it("a first start on the host's stream wakes nobody for the messages already in it, and counts those published from then on", async () => {
    const h = await harness();
    // The host's own stream over the subjects, keeping messages regardless of age.
    await (
      await jetstreamManager(h.nc)
    ).streams.add({
      name: h.stream,
      subjects: [messageCreateSubjects(h.subjectPrefix)],
      storage: StorageType.File,
      retention: RetentionPolicy.Limits,
    });
    const channel = await host.channel(server);
    const backlog = events(channel, 5);
    for (const event of backlog) await h.publish(event);

    const { log, lines } = capturedLogger();
    const bridge = await replica(h, { log });
    expect(bridge.intake.start).toEqual({ kind: 'new-messages' });
    const [fresh] = events(channel, 1);
    await h.publish(fresh!);
    await until('the new event counted', async () => (await h.consumerIdle()) && (await readerRow(channel)) !== undefined);

    expect(await readerRow(channel)).toMatchObject({ message_count: 1, first_message_id: fresh!.id, last_message_id: fresh!.id });
    expect(await ledgerHas(backlog.map((e) => e.id))).toBe(0);
    // And it said that this stream outlives the ledger.
    expect(logged(lines).find((l) => l.msg.includes('exactly-once ledger'))).toMatchObject({
      level: 40,
      stream: h.stream,
      streamMaxAgeMs: 0,
      ledgerRetentionMs: processedEventRetentionMs,
    });
  });

  it('a restart resumes where the consumer was: events published meanwhile are counted, none twice, whatever start time is configured', async () => {
    const h = await harness();
    const channel = await host.channel(server);
    const [before, whileDown] = [events(channel, 3), events(channel, 4)];
    const { log, lines } = capturedLogger();
    const first = await replica(h, { log });
    expect(first.intake.start).toEqual({ kind: 'new-messages' });
    for (const event of before) await h.publish(event);
    await until('the first events counted', async () => (await h.consumerIdle()) && (await readerRow(channel))?.message_count === 3);
    await stop(first);

    for (const event of whileDown) await h.publish(event);
    const second = await replica(h, { log, startAt: new Date() }); // after every event so far: must not matter now
    expect(second.intake.start).toEqual({ kind: 'resumed' });
    await until('the events published while it was down', async () => (await h.consumerIdle()) && (await readerRow(channel))?.message_count === 7);
    expect(await readerRow(channel)).toMatchObject({ message_count: 7, first_message_id: before[0]!.id, last_message_id: whileDown[3]!.id });
    expect(await ledgerHas([...before, ...whileDown].map((e) => e.id))).toBe(7);

    const messages = logged(lines);
    expect(messages.filter((l) => l.msg.startsWith('JetStream consumer')).map((l) => l.msg)).toEqual([
      'JetStream consumer created: starting at messages published from now on',
      'JetStream consumer exists: resuming where it was',
    ]);
    expect(messages.find((l) => l.msg.startsWith('start time ignored'))).toMatchObject({ level: 40 });
    // The stream the bridge creates keeps messages 3 days, within the ledger's 4: nothing to say.
    expect(messages.find((l) => l.msg.includes('exactly-once ledger'))).toBeUndefined();
  });

  it('a new consumer with a start time starts at the messages stored from then on', async () => {
    const h = await harness();
    const channel = await host.channel(server);
    await replica(h).then(stop); // the stream exists; its consumer is removed below, as if never created
    await (await jetstreamManager(h.nc)).consumers.delete(h.stream, h.consumer);
    const [older, newer] = [events(channel, 2), events(channel, 3)];
    for (const event of older) await h.publish(event);
    const jsm = await jetstreamManager(h.nc);
    const lastOlder = (await jsm.streams.getMessage(h.stream, {
      last_by_subj: `${h.subjectPrefix}channel.${channel}.MESSAGE_CREATE`,
    }))!.time.getTime();
    // The start time has millisecond precision: let the (shared) clock pass the older messages' millisecond.
    const startAt = new Date(lastOlder + 1);
    await until('the clock past the older messages', async () => Date.now() > startAt.getTime());
    for (const event of newer) await h.publish(event);

    const bridge = await replica(h, { startAt });
    expect(bridge.intake.start).toEqual({ kind: 'start-time', at: startAt });
    await until('the newer events counted', async () => (await h.consumerIdle()) && (await readerRow(channel))?.message_count === 3);
    expect(await readerRow(channel)).toMatchObject({ message_count: 3, first_message_id: newer[0]!.id, last_message_id: newer[2]!.id });
    expect(await ledgerHas(older.map((e) => e.id))).toBe(0);
  });

  it('the ledger outlives the stream only for a bounded max_age within its retention', () => {
    const day = 86_400_000;
    expect(ledgerOutlivesStream(3 * day, processedEventRetentionMs)).toBe(true);
    expect(ledgerOutlivesStream(processedEventRetentionMs, processedEventRetentionMs)).toBe(true);
    expect(ledgerOutlivesStream(processedEventRetentionMs + 1, processedEventRetentionMs)).toBe(false);
    expect(ledgerOutlivesStream(0, processedEventRetentionMs)).toBe(false);
  });
});

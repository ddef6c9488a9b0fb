/**
 * Events the bridge must not act on: malformed ones are counted, logged with
 * ids only, terminated (never redelivered) and wake no one; events for unknown channels are
 * acknowledged. Neither holds up the events behind them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventBridge } from '../../../src/bridge/event-bridge.js';
import { VIEW_CHANNEL } from '../../../src/permissions/flags.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { hostFixtures, nextId, type Registration } from '../../support/host-fixtures.js';
import { bridgeHarness, capturedLogger, messageEvent, outcomeCount, pendingRows, pendingSignals, until, type BridgeHarness } from './harness.js';
import { jetstreamManager } from '@nats-io/jetstream';

let db: TestDatabase;
let h: BridgeHarness;
let bridge: EventBridge;
const logs = capturedLogger();
let channel: string;
let author: string;
let reader: Registration;

beforeAll(async () => {
  db = await freshDatabase();
  h = await bridgeHarness();
  const host = hostFixtures(db.pool);
  const [owner, a, r] = await host.users(3);
  author = a!;
  const server = await host.server({ owner: owner!, everyone: VIEW_CHANNEL, members: [author, r!] });
  channel = await host.channel(server);
  reader = await host.registration(r!);
  bridge = await h.startReplica(db, { log: logs.log });
});

afterAll(async () => {
  await bridge.stop();
  await h.close();
  await db.drop();
});

const SECRET = 'ciphertext-that-must-never-be-logged';

describe('malformed events', () => {
  it('are counted and terminated, wake nobody, and do not hold up the valid event behind them', async () => {
    const malformedBefore = await outcomeCount('malformed');
    const valid = messageEvent(channel, author, nextId());
    const bad = [
      { subject: `channel.${channel}.MESSAGE_CREATE`, body: `{"id": "${nextId()}", "content": "${SECRET}"` }, // not JSON
      { subject: `channel.${channel}.MESSAGE_CREATE`, body: JSON.stringify({ ...messageEvent(nextId(), author, nextId()), content: SECRET }) }, // channel_id ≠ subject
      {
        subject: `channel.${channel}.MESSAGE_CREATE`,
        body: JSON.stringify({ ...messageEvent(channel, author, '9223372036854775808'), content: SECRET }),
      }, // id beyond int8
      { subject: `channel.${channel}.MESSAGE_CREATE`, body: JSON.stringify({ ...messageEvent(channel, author, nextId()), created_at: 'yesterday' }) },
      { subject: `channel.${channel}.MESSAGE_CREATE`, body: JSON.stringify({ ...messageEvent(channel, author, nextId()), author_id: 7 }) },
      { subject: 'channel.general.MESSAGE_CREATE', body: JSON.stringify({ ...messageEvent('general', author, nextId()), content: SECRET }) },
    ];
    for (const { subject, body } of bad) await h.publishRaw(subject, body);
    await h.publish(valid);

    await until(
      'the valid event recorded and the stream drained',
      async () => (await h.settled(db)) && (await pendingRows(db.pool, channel)).length > 0,
    );
    expect(await outcomeCount('malformed')).toBe(malformedBefore + bad.length);
    expect(await pendingRows(db.pool, channel)).toEqual([
      expect.objectContaining({ registration_id: reader.id, message_count: 1, first_message_id: valid.id }),
    ]);
    expect(await pendingSignals(h.temporal, reader)).toBe(1);

    const info = await (await jetstreamManager(h.nc)).consumers.info(h.stream, h.consumer);
    expect(info.num_redelivered).toBe(0); // terminated, not retried

    const dropped = logs.lines().filter((line) => line.includes('malformed MESSAGE_CREATE'));
    expect(dropped).toHaveLength(bad.length);
    expect(dropped.map((line) => (JSON.parse(line) as { reason: string }).reason).sort()).toEqual(
      ['author_id', 'channel_mismatch', 'created_at', 'id', 'not_json', 'subject'].sort(),
    );
    expect(logs.lines().join('\n')).not.toContain(SECRET);
  });
});

describe('an event for a channel that does not exist', () => {
  it('is acknowledged and wakes nobody', async () => {
    const before = await outcomeCount('unknown_channel');
    const ghost = nextId();
    await h.publish(messageEvent(ghost, author, nextId()));
    await until('the event acknowledged', async () => (await h.consumerIdle()) && (await outcomeCount('unknown_channel')) > before);
    expect(await pendingRows(db.pool, ghost)).toEqual([]);
    const info = await (await jetstreamManager(h.nc)).consumers.info(h.stream, h.consumer);
    expect(info.num_redelivered).toBe(0);
  });
});

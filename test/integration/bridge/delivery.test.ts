/**
 * From a MESSAGE_CREATE on NATS to `push_pending` rows and signalled registration workflows,
 * on real JetStream, PostgreSQL and Temporal: exactly the devices that may see the message.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'slonik';
import type { EventBridge } from '../../../src/bridge/event-bridge.js';
import { signalRegistrations } from '../../../src/bridge/signal-pending.js';
import { VIEW_CHANNEL } from '../../../src/permissions/flags.js';
import { PushDeviceId, PushTransport, PushUserId, registrationWorkflowId } from '../../../temporal/names.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { hostFixtures, nextId, type HostFixtures, type Registration } from '../../support/host-fixtures.js';
import { bridgeHarness, historyText, messageEvent, pendingRows, pendingSignals, until, type BridgeHarness } from './harness.js';

let db: TestDatabase;
let h: BridgeHarness;
let host: HostFixtures;
let bridge: EventBridge;

let alice: string; // the author
let general: string;
let random: string;
const devices: Record<string, Registration> = {};

beforeAll(async () => {
  db = await freshDatabase();
  h = await bridgeHarness();
  host = hostFixtures(db.pool);
  const [owner, a, bob, carol, dave, erin, frank] = await host.users(7);
  alice = a!;
  const server = await host.server({ owner: owner!, everyone: VIEW_CHANNEL, members: [alice, bob!, carol!, dave!, erin!] });
  general = await host.channel(server);
  random = await host.channel(server);
  await host.overwrite(general, { member: carol! }, { deny: VIEW_CHANNEL }); // denied in #general only
  await host.mute(dave!, { server }); // muted for the whole server
  await host.mute(erin!, { channel: general }, { until: new Date(Date.now() - 60_000) }); // a mute that has expired
  Object.assign(devices, {
    owner: await host.registration(owner!),
    alicePhone: await host.registration(alice),
    bobPhone: await host.registration(bob!, { transport: 'fcm' }),
    bobTablet: await host.registration(bob!, { transport: 'unifiedpush' }),
    carol: await host.registration(carol!),
    dave: await host.registration(dave!),
    erin: await host.registration(erin!),
    frank: await host.registration(frank!), // not a member at all
  });
  bridge = await h.startReplica(db);
});

afterAll(async () => {
  await bridge.stop();
  await h.close();
  await db.drop();
});

async function publishAndSettle(channelId: string, authorId: string): Promise<string> {
  const id = nextId();
  await h.publish(messageEvent(channelId, authorId, id));
  await until(
    `event ${id} handled`,
    async () => (await h.settled(db)) && (await pendingRows(db.pool, channelId)).some((r) => r.last_message_id === id),
  );
  return id;
}

const rowsFor = async (channelId: string) => new Map((await pendingRows(db.pool, channelId)).map((r) => [r.registration_id, r]));

describe('a message in a server channel', () => {
  let first: string;
  const createdAt = new Date('2026-10-15T12:00:00.250Z');

  it('gives each device of each viewer except the author one pending row', async () => {
    first = nextId();
    await h.publish(messageEvent(general, alice, first, createdAt));
    await until('rows', async () => (await h.settled(db)) && (await pendingRows(db.pool, general)).length > 0);
    const rows = await rowsFor(general);
    const woken = [devices.owner!, devices.bobPhone!, devices.bobTablet!, devices.erin!];
    expect([...rows.keys()].sort()).toEqual(woken.map((d) => d.id).sort());
    for (const row of rows.values()) {
      expect(row).toMatchObject({ channel_id: general, message_count: 1, first_message_id: first, last_message_id: first, is_dm: false });
      expect(row.first_at.toISOString()).toBe(createdAt.toISOString());
    }
  });

  it('signals each woken device once, starting its workflow with ids and transport only', async () => {
    for (const device of [devices.owner!, devices.bobPhone!, devices.bobTablet!, devices.erin!]) {
      expect(await pendingSignals(h.temporal, device)).toBe(1);
      const description = await h.temporal.workflow.getHandle(registrationWorkflowId(device.userId, device.deviceId)).describe();
      expect(description.taskQueue).toBe(h.taskQueue);
      expect(description.typedSearchAttributes.get(PushUserId)).toBe(device.userId);
      expect(description.typedSearchAttributes.get(PushDeviceId)).toBe(device.deviceId);
      expect(description.typedSearchAttributes.get(PushTransport)).toBe(device.transport);
      const history = await historyText(h.temporal, device);
      expect(history).toContain(device.deviceId);
      expect(history).not.toContain(device.token);
    }
  });

  it('wakes nobody who is denied VIEW_CHANNEL, muted, not a member, or the author', async () => {
    const rows = await rowsFor(general);
    for (const device of [devices.carol!, devices.dave!, devices.frank!, devices.alicePhone!]) {
      expect(rows.has(device.id)).toBe(false);
      expect(await pendingSignals(h.temporal, device)).toBeUndefined();
    }
  });

  it('a busy channel adds to the rows and costs no further signal', async () => {
    const second = await publishAndSettle(general, alice);
    const third = await publishAndSettle(general, alice);
    for (const row of (await rowsFor(general)).values()) {
      expect(row).toMatchObject({ message_count: 3, first_message_id: first, last_message_id: third });
      expect(row.first_at.toISOString()).toBe(createdAt.toISOString());
    }
    expect(BigInt(third)).toBeGreaterThan(BigInt(second));
    expect(await pendingSignals(h.temporal, devices.bobPhone!)).toBe(1);
  });

  it('a message in another channel is a new row, hence a new signal; carol sees #random', async () => {
    await publishAndSettle(random, alice);
    const rows = await rowsFor(random);
    expect(rows.has(devices.carol!.id)).toBe(true);
    expect(rows.has(devices.dave!.id)).toBe(false);
    expect(await pendingSignals(h.temporal, devices.bobPhone!)).toBe(2);
    expect(await pendingSignals(h.temporal, devices.carol!)).toBe(1);
  });

  it("the author's own message in a channel they were woken for adds nothing to their row", async () => {
    const before = (await rowsFor(general)).get(devices.bobPhone!.id)!;
    const bob = devices.bobPhone!.userId;
    await publishAndSettle(general, bob);
    const after = await rowsFor(general);
    expect(after.get(devices.bobPhone!.id)).toEqual(before);
    expect(after.get(devices.owner!.id)!.message_count).toBe(before.message_count + 1);
  });
});

describe('a message in a DM', () => {
  it('wakes the other members, as a DM, whatever any server says', async () => {
    const bob = devices.bobPhone!.userId;
    const dave = devices.dave!.userId; // muted on the server: no effect on a DM
    const group = await host.dm([alice, bob, dave]);
    await publishAndSettle(group, alice);
    const rows = await rowsFor(group);
    expect([...rows.keys()].sort()).toEqual([devices.bobPhone!.id, devices.bobTablet!.id, devices.dave!.id].sort());
    for (const row of rows.values()) expect(row.is_dm).toBe(true);
  });

  it('a mute on the DM silences it', async () => {
    const bob = devices.bobPhone!.userId;
    const dm = await host.dm([alice, bob]);
    await host.mute(bob, { channel: dm });
    const id = nextId();
    await h.publish(messageEvent(dm, alice, id));
    // A marker event after it: once the marker is recorded, the DM message was handled too.
    await publishAndSettle(general, alice);
    expect(await pendingRows(db.pool, dm)).toEqual([]);
  });
});

describe('signalling the devices a transaction chose', () => {
  it('names them a chunk at a time, as they are now, and signals each once', async () => {
    const users = await host.users(5);
    const chosen = await Promise.all(users.map((u, i) => host.registration(u, { transport: i % 2 === 0 ? 'fcm' : 'unifiedpush' })));
    const gone = chosen[3]!; // deleted after the commit that chose it
    await db.pool.query(sql.unsafe`DELETE FROM push_registrations WHERE id = ${gone.id}`);
    const target = { client: h.temporal, taskQueue: h.taskQueue, concurrency: 2, namingChunk: 2 };
    expect(
      await signalRegistrations(
        db.pool,
        target,
        chosen.map((d) => d.id),
      ),
    ).toBe(4);
    for (const device of chosen.filter((d) => d !== gone)) {
      expect(await pendingSignals(h.temporal, device)).toBe(1);
      const description = await h.temporal.workflow.getHandle(registrationWorkflowId(device.userId, device.deviceId)).describe();
      expect(description.typedSearchAttributes.get(PushTransport)).toBe(device.transport);
    }
    expect(await pendingSignals(h.temporal, gone)).toBeUndefined();
  });
});

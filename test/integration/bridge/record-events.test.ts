/**
 * The recording transaction on real PostgreSQL: what a batch of events of one channel does
 * to `push_pending` and the ledger, and which devices it says to signal.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { sql } from 'slonik';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { MessageEvent } from '../../../src/bridge/event.js';
import { headRegistrations, recordChannelEvents } from '../../../src/bridge/record-events.js';
import { createDatabasePool } from '../../../src/db/pool.js';
import { devicesToSignal } from '../../../src/bridge/signal-pending.js';
import { VIEW_CHANNEL } from '../../../src/permissions/flags.js';
import { projectRoot } from '../../../src/process/paths.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { hostFixtures, nextId, type HostFixtures, type Registration } from '../../support/host-fixtures.js';
import { pendingRows } from './harness.js';
import { runSql } from '../../support/run-sql.js';

let db: TestDatabase;
let host: HostFixtures;
let server: string;
let alice: Registration;
let bob: Registration;
let carol: Registration;

beforeAll(async () => {
  db = await freshDatabase();
  host = hostFixtures(db.pool);
  const [owner, a, b, c] = await host.users(4);
  server = await host.server({ owner: owner!, everyone: VIEW_CHANNEL, members: [a!, b!, c!] });
  [alice, bob, carol] = [await host.registration(a!), await host.registration(b!), await host.registration(c!)];
});

afterAll(async () => {
  await db.drop();
});

const at = (second: number) => new Date(Date.UTC(2026, 9, 15, 12, 0, second));
const event = (channelId: string, author: Registration, messageId: string, createdAt: Date): MessageEvent => ({
  messageId,
  channelId,
  authorId: author.userId,
  createdAt,
});
const ids = (n: number) => Array.from({ length: n }, () => nextId()); // increasing
const rowOf = async (channelId: string, device: Registration) => (await pendingRows(db.pool, channelId)).find((r) => r.registration_id === device.id);
const signalled = (registrationIds: readonly string[]) => [...registrationIds].sort();
/** Resolves once a backend of this database waits for a row lock. */
const someoneWaitsForALock = async () => {
  for (let i = 0; i < 500; i++) {
    const waiting = await db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`);
    if (waiting > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error('nobody waited for a lock');
};

describe('recordChannelEvents', () => {
  it('counts each recipient the messages they did not write, first by earliest id, last by greatest', async () => {
    const channel = await host.channel(server);
    const [m1, m2, m3] = ids(3);
    // Out of order, and alice wrote two of the three.
    const recorded = await recordChannelEvents(db.pool, channel, [
      event(channel, alice, m3!, at(3)),
      event(channel, bob, m2!, at(2)),
      event(channel, alice, m1!, at(1)),
    ]);
    expect(recorded.records).toEqual(['counted', 'counted', 'counted']);
    expect(await rowOf(channel, alice)).toMatchObject({ message_count: 1, first_message_id: m2, last_message_id: m2, first_at: at(2) });
    expect(await rowOf(channel, bob)).toMatchObject({ message_count: 2, first_message_id: m1, last_message_id: m3, first_at: at(1) });
    expect(await rowOf(channel, carol)).toMatchObject({ message_count: 3, first_message_id: m1, last_message_id: m3, first_at: at(1), is_dm: false });
    expect(signalled(recorded.registrationsToSignal)).toEqual([alice.id, bob.id, carol.id].sort());
    expect(recorded).toMatchObject({ rowsCreated: 3, rowsUpdated: 0 });
  });

  it('names each device to signal by its own user, device and transport, as they are after the commit', async () => {
    const [owner, u1, u2, u3] = await host.users(4);
    const other = await host.server({ owner: owner!, everyone: VIEW_CHANNEL, members: [u1!, u2!, u3!] });
    const channel = await host.channel(other);
    const devices = [
      await host.registration(u1!, { transport: 'fcm' }),
      await host.registration(u2!, { transport: 'unifiedpush' }),
      await host.registration(u3!),
    ];
    const [m1] = ids(1);
    const recorded = await recordChannelEvents(db.pool, channel, [{ messageId: m1!, channelId: channel, authorId: owner!, createdAt: at(1) }]);
    // Deleted between the commit and the naming: nobody left to signal.
    await db.pool.query(sql.unsafe`DELETE FROM push_registrations WHERE id = ${devices[2]!.id}`);
    const device = (r: Registration) => ({ userId: r.userId, deviceId: r.deviceId, transport: r.transport });
    const byUser = (a: { userId: string }, b: { userId: string }) => (a.userId < b.userId ? -1 : 1);
    expect(signalled(recorded.registrationsToSignal)).toEqual(devices.map((d) => d.id).sort());
    expect([...(await devicesToSignal(db.pool, recorded.registrationsToSignal))].sort(byUser)).toEqual(devices.slice(0, 2).map(device).sort(byUser));
  });

  it('a later, earlier-numbered message moves first back; existing rows are updated, not signalled', async () => {
    const channel = await host.channel(server);
    const [m1, m2] = ids(2);
    await recordChannelEvents(db.pool, channel, [event(channel, alice, m2!, at(20))]);
    const recorded = await recordChannelEvents(db.pool, channel, [event(channel, alice, m1!, at(10))]);
    expect(await rowOf(channel, carol)).toMatchObject({ message_count: 2, first_message_id: m1, first_at: at(10), last_message_id: m2 });
    expect(recorded).toMatchObject({ registrationsToSignal: [], rowsCreated: 0, rowsUpdated: 2 });
  });

  it('an event seen before counts nothing, and re-signals the rows it created and still owns', async () => {
    const channel = await host.channel(server);
    const [m1, m2] = ids(2);
    await recordChannelEvents(db.pool, channel, [event(channel, alice, m1!, at(1))]);
    await recordChannelEvents(db.pool, channel, [event(channel, bob, m2!, at(2))]); // alice's row is created by m2
    const again = await recordChannelEvents(db.pool, channel, [event(channel, alice, m1!, at(1))]);
    expect(again.records).toEqual(['duplicate']);
    expect(signalled(again.registrationsToSignal)).toEqual([bob.id, carol.id].sort());
    expect(again).toMatchObject({ rowsCreated: 0, rowsUpdated: 0 });
    expect(await rowOf(channel, carol)).toMatchObject({ message_count: 2 });
  });

  it('two copies of one event in one batch count once', async () => {
    const channel = await host.channel(server);
    const [m1] = ids(1);
    const recorded = await recordChannelEvents(db.pool, channel, [event(channel, alice, m1!, at(1)), event(channel, alice, m1!, at(1))]);
    expect(recorded.records).toEqual(['counted', 'duplicate']);
    expect(await rowOf(channel, bob)).toMatchObject({ message_count: 1 });
  });

  it('a batch of new and seen events counts the new ones only', async () => {
    const channel = await host.channel(server);
    const [m1, m2] = ids(2);
    await recordChannelEvents(db.pool, channel, [event(channel, alice, m1!, at(1))]);
    const recorded = await recordChannelEvents(db.pool, channel, [event(channel, alice, m1!, at(1)), event(channel, alice, m2!, at(2))]);
    expect(recorded.records).toEqual(['duplicate', 'counted']);
    expect(await rowOf(channel, bob)).toMatchObject({ message_count: 2, first_message_id: m1, last_message_id: m2 });
  });

  it('a channel that does not exist records nothing, not even in the ledger', async () => {
    const ghost = nextId();
    const [m1] = ids(1);
    expect((await recordChannelEvents(db.pool, ghost, [event(ghost, alice, m1!, at(1))])).records).toEqual(['unknown_channel']);
    const channel = await host.channel(server);
    // The same id in a real channel is new: it was not entered in the ledger.
    expect((await recordChannelEvents(db.pool, channel, [event(channel, alice, m1!, at(1))])).records).toEqual(['counted']);
  });
});

describe('recordChannelEvents for a channel larger than the head', () => {
  let big: string;
  let members: Registration[];
  let author: string;

  beforeAll(async () => {
    const [owner, ...users] = await host.users(headRegistrations + 44);
    author = owner!;
    const bigServer = await host.server({ owner: owner!, everyone: VIEW_CHANNEL, members: users });
    big = await host.channel(bigServer);
    members = [];
    for (const u of users) members.push(await host.registration(u));
  });

  const message = (id: string, authorId = author) => ({ messageId: id, channelId: big, authorId, createdAt: at(1) });
  const counts = async (channelId: string) => new Map((await pendingRows(db.pool, channelId)).map((r) => [r.registration_id, r.message_count]));
  /** The registration ids owed in the outbox for this channel's server, each as often as owed. */
  const owedIds = async () =>
    (await db.pool.anyFirst(sql.type(z.object({ id: z.string() }))`SELECT unnest(registration_ids)::text AS id FROM push_signal_outbox`)).toSorted();
  const mark = (id: string) =>
    db.pool.oneFirst(
      sql.type(z.object({ t: z.string().nullable() }))`SELECT recorded_through AS t FROM push_processed_events WHERE message_id = ${id}`,
    );
  const everyMember = () => members.map((m) => m.id).toSorted();

  beforeEach(async () => {
    await db.pool.query(sql.unsafe`DELETE FROM push_signal_outbox`);
    await db.pool.query(sql.unsafe`DELETE FROM push_pending WHERE channel_id = ${big}`);
  });

  /** Holds `registration` locked FOR UPDATE (as a sweep would) until the returned function is called. */
  const holdLocked = async (registration: Registration) => {
    let release!: () => void;
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const released = new Promise<void>((resolve) => (release = resolve));
    const holder = db.pool.transaction(async (tx) => {
      await tx.query(sql.unsafe`SELECT id FROM push_registrations WHERE id = ${registration.id} FOR UPDATE`);
      locked();
      await released;
    });
    await isLocked;
    return async () => {
      release();
      await holder;
    };
  };

  it("owes the head's signals before the rest is written, then every member's, each once", async () => {
    const [m1] = ids(1);
    // The last member's registration is held, so the tail waits on it: what a signaller polling then finds.
    const release = await holdLocked(members.at(-1)!);
    let told = 0;
    const recording = recordChannelEvents(db.pool, big, [message(m1!)], undefined, () => void told++);
    recording.catch(() => undefined);
    await someoneWaitsForALock();
    expect(told).toBe(1);
    expect((await counts(big)).size).toBe(headRegistrations);
    expect(await owedIds()).toEqual(
      members
        .slice(0, headRegistrations)
        .map((m) => m.id)
        .toSorted(),
    );
    expect(await mark(m1!)).toBe(members[headRegistrations - 1]!.id);
    await release();

    const recorded = await recording;
    expect(told).toBe(2);
    expect(recorded.records).toEqual(['counted']);
    expect(recorded.registrationsToSignal.toSorted()).toEqual(everyMember());
    expect(recorded).toMatchObject({ rowsCreated: members.length, rowsUpdated: 0 });
    const after = await counts(big);
    expect([...after.keys()].toSorted()).toEqual(everyMember());
    expect([...after.values()].every((n) => n === 1)).toBe(true);
    expect(await owedIds()).toEqual(everyMember());
    expect(await mark(m1!)).toBeNull();
  });

  it('a delivery that stops between head and tail is finished by the redelivery: every member counted once', async () => {
    const [m1] = ids(1);
    // The bridge dies once the head committed: here, the caller's hook throws before the tail.
    const dying = recordChannelEvents(db.pool, big, [message(m1!)], undefined, () => {
      throw new Error('the bridge stops');
    });
    await expect(dying).rejects.toThrow('the bridge stops');
    expect((await counts(big)).size).toBe(headRegistrations);
    expect(await mark(m1!)).not.toBeNull();

    const redelivered = await recordChannelEvents(db.pool, big, [message(m1!)]);
    expect(redelivered.records).toEqual(['duplicate']);
    const after = await counts(big);
    expect([...after.keys()].toSorted()).toEqual(everyMember());
    expect([...after.values()].every((n) => n === 1)).toBe(true);
    // Every member is owed a signal: the head's rows by the head (and again, as a repeat's own), the rest by the tail.
    expect(new Set(await owedIds())).toEqual(new Set(everyMember()));
    expect(await mark(m1!)).toBeNull();
    // A third copy finds the message finished and writes nothing.
    const third = await recordChannelEvents(db.pool, big, [message(m1!)]);
    expect(third).toMatchObject({ records: ['duplicate'], rowsCreated: 0, rowsUpdated: 0 });
    expect([...(await counts(big)).values()].every((n) => n === 1)).toBe(true);
  });

  it('two copies of one message recorded at once by two replicas count every member once', async () => {
    const [m1] = ids(1);
    const replicas = await Promise.all([createDatabasePool(db.url, { maximumPoolSize: 2 }), createDatabasePool(db.url, { maximumPoolSize: 2 })]);
    try {
      const recorded = await Promise.all(replicas.map((pool) => recordChannelEvents(pool, big, [message(m1!)])));
      expect(recorded.flatMap((r) => r.records).toSorted()).toEqual(['counted', 'duplicate']);
    } finally {
      await Promise.all(replicas.map((pool) => pool.end()));
    }
    const after = await counts(big);
    expect([...after.keys()].toSorted()).toEqual(everyMember());
    expect([...after.values()].every((n) => n === 1)).toBe(true);
    expect(await mark(m1!)).toBeNull();
  });

  it("is what the bridge's role may do (deploy/postgres/grants.sql): head, tail and a redelivery's tail", async () => {
    // The roles as deploy/postgres/roles.sql expects them (cluster-wide: other files may create them too).
    const roles = ['zippchat_push_migrate', 'zippchat_push_api', 'zippchat_push_worker', 'zippchat_push_bridge'];
    await runSql(
      db.url,
      roles
        .map((r) => `DO $$ BEGIN CREATE ROLE ${r} LOGIN PASSWORD '${r}-pw'; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$;`)
        .join('\n'),
    );
    for (const file of ['roles.sql', 'grants.sql']) await runSql(db.url, readFileSync(path.join(projectRoot, 'deploy', 'postgres', file), 'utf8'));
    const url = new URL(db.url);
    [url.username, url.password] = ['zippchat_push_bridge', 'zippchat_push_bridge-pw'];
    const bridgePool = await createDatabasePool(url.toString(), { maximumPoolSize: 2 });
    try {
      const [m1, m2] = ids(2);
      expect((await recordChannelEvents(bridgePool, big, [message(m1!)])).rowsCreated).toBe(members.length);
      await db.pool.query(sql.unsafe`DELETE FROM push_pending WHERE channel_id = ${big}`); // drained: m2 creates rows again
      await expect(
        recordChannelEvents(bridgePool, big, [message(m2!)], undefined, () => {
          throw new Error('the bridge stops');
        }),
      ).rejects.toThrow('the bridge stops');
      expect((await recordChannelEvents(bridgePool, big, [message(m2!)])).records).toEqual(['duplicate']);
    } finally {
      await bridgePool.end();
    }
    expect([...(await counts(big)).keys()].toSorted()).toEqual(everyMember());
    expect([...(await counts(big)).values()].every((n) => n === 1)).toBe(true);
  });

  it("a batch of messages shares its head and its tail; each member counts the others' messages", async () => {
    const [m1, m2] = ids(2);
    const writer = members[headRegistrations + 10]!; // a member past the head writes the second
    const recorded = await recordChannelEvents(db.pool, big, [message(m1!), message(m2!, writer.userId)]);
    expect(recorded.records).toEqual(['counted', 'counted']);
    const after = await counts(big);
    expect(after.get(writer.id)).toBe(1);
    expect(after.get(members[0]!.id)).toBe(2);
    expect(after.get(members.at(-1)!.id)).toBe(2);
    expect([...after.keys()].toSorted()).toEqual(everyMember());
    expect(await mark(m1!)).toBeNull();
    expect(await mark(m2!)).toBeNull();
  });

  it('a head whose registration is deleted under it still leaves the rest to the tail', async () => {
    const [m1] = ids(1);
    const doomed = members[5]!;
    // A logout: the delete is made, its commit held until the head waits on the row.
    let commit!: () => void;
    const held = new Promise<void>((resolve) => (commit = resolve));
    const logout = db.pool.transaction(async (tx) => {
      await tx.query(sql.unsafe`DELETE FROM push_registrations WHERE id = ${doomed.id}`);
      await held;
    });
    const recording = recordChannelEvents(db.pool, big, [message(m1!)]);
    recording.catch(() => undefined);
    await someoneWaitsForALock();
    commit();
    await logout;
    await recording;
    members.splice(5, 1); // gone: the later tests' members are the others
    const after = await counts(big);
    expect([...after.keys()].toSorted()).toEqual(everyMember());
    expect([...after.values()].every((n) => n === 1)).toBe(true);
  });
});

describe('recordChannelEvents while registrations are deleted', () => {
  it('a recipient whose registration is deleted mid-statement is skipped; every other recipient gets the event', async () => {
    const [owner, ...members] = await host.users(4);
    const other = await host.server({ owner: owner!, everyone: VIEW_CHANNEL, members });
    const channel = await host.channel(other);
    const [kept1, doomed, kept2] = [await host.registration(members[0]!), await host.registration(members[1]!), await host.registration(members[2]!)];
    const [m1] = ids(1);

    // A logout: the delete is made, its commit held until the bridge is waiting on the row.
    let commit!: () => void;
    const held = new Promise<void>((resolve) => (commit = resolve));
    const logout = db.pool.transaction(async (tx) => {
      await tx.query(sql.unsafe`DELETE FROM push_registrations WHERE id = ${doomed.id}`);
      await held;
    });
    const recording = recordChannelEvents(db.pool, channel, [{ messageId: m1!, channelId: channel, authorId: owner!, createdAt: at(1) }]);
    recording.catch(() => undefined); // asserted below, once the delete has committed
    await someoneWaitsForALock();
    commit();
    await logout;

    const recorded = await recording;
    expect(recorded.records).toEqual(['counted']);
    expect(signalled(recorded.registrationsToSignal)).toEqual([kept1.id, kept2.id].sort());
    const rows = await pendingRows(db.pool, channel);
    expect(rows.map((r) => r.registration_id).sort()).toEqual([kept1.id, kept2.id].sort());
  });

  it('and the sweep, which locks its doomed registrations FOR UPDATE before deleting them, never deadlocks with it', async () => {
    const [owner, ...members] = await host.users(4);
    const other = await host.server({ owner: owner!, everyone: VIEW_CHANNEL, members });
    const channel = await host.channel(other);
    const [doomed1, doomed2, kept] = [
      await host.registration(members[0]!),
      await host.registration(members[1]!),
      await host.registration(members[2]!),
    ];
    const [m1, m2] = ids(2);
    // The first doomed device already has a row for the channel (the event updates it); the second has none (the event inserts it).
    await recordChannelEvents(db.pool, channel, [{ messageId: m1!, channelId: channel, authorId: owner!, createdAt: at(1) }]);
    await db.pool.query(sql.unsafe`DELETE FROM push_pending WHERE registration_id = ${doomed2.id}`);

    // The sweep's order: lock the doomed registrations, then delete them (their pending rows cascade).
    let holding!: () => void;
    let proceed!: () => void;
    const held = new Promise<void>((resolve) => (holding = resolve));
    const go = new Promise<void>((resolve) => (proceed = resolve));
    const sweep = db.pool.transaction(async (tx) => {
      await tx.query(
        sql.unsafe`SELECT id FROM push_registrations WHERE id = ANY(${sql.array([doomed1.id, doomed2.id], 'int8')}) ORDER BY id FOR UPDATE`,
      );
      holding();
      await go;
      await tx.query(sql.unsafe`DELETE FROM push_registrations WHERE id = ANY(${sql.array([doomed1.id, doomed2.id], 'int8')})`);
    });
    await held;
    // slonik runs a transaction the deadlock detector rolled back again (after a second's
    // stall): without that retry, a deadlock is an error here.
    const bridgePool = await createDatabasePool(db.url, { maximumPoolSize: 1, transactionRetryLimit: 0 });
    const recording = recordChannelEvents(bridgePool, channel, [{ messageId: m2!, channelId: channel, authorId: owner!, createdAt: at(2) }]);
    recording.catch(() => undefined);
    await someoneWaitsForALock();
    proceed();

    await expect(sweep).resolves.toBeUndefined();
    const recorded = await recording.finally(() => bridgePool.end());
    expect(recorded.records).toEqual(['counted']);
    const rows = await pendingRows(db.pool, channel);
    expect(rows.map((r) => [r.registration_id, r.message_count])).toEqual([[kept.id, 2]]);
  });
});

/**
 * The outage detector as the send activity meets it: real PostgreSQL, the real transports
 * posting to the simulator's distributors (each its own origin) and to a fake Google, and the
 * send activity's bookkeeping (counted failures, back-offs, prunes). Workflow time is passed
 * in as the workflows pass it; nothing sleeps.
 *
 * - an outage is a share of an origin's recently active registrations: dead endpoints on a
 *   busy origin, or two on a quiet one, are dead endpoints (pruned after ten), and another
 *   user's DM on the same origin goes out;
 * - an FCM quota answer about one device is that device's back-off, not FCM's failure;
 * - the same failure from many origins at once is ours: nobody is pruned for it;
 * - the probe of an outage goes to a registration that delivered recently;
 * - the end of an outage clears every back-off it set, page by page by keyset, also of devices
 *   the bridge is recording for, and comes back for one a claim held locked;
 * - self-hosted origins never appear in the log lines, only as a stable tag.
 */
import { Client, Connection } from '@temporalio/client';
import pg from 'pg';
import { sql } from 'slonik';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { createRegistrationActivities, type SendResult } from '../../activities/registration.js';
import { maxConsecutiveFailures } from '../../domain/backoff.js';
import { fcmError, startFakeFcm, type FakeFcm } from '../../devstack/stand-ins/fcm.js';
import { createServiceAccount, startGoogleOAuth, type FakeGoogleOAuth } from '../../devstack/stand-ins/google-oauth.js';
import { loadConfig } from '../../src/config/index.js';
import type { TransportName, WakePriority } from '../../domain/vocabulary.js';
import { createTransports, type Transports } from '../../src/transports/index.js';
import { createOriginLabeler } from '../../src/transports/origin-label.js';
import { createOutageDetector, originKey } from '../../src/transports/outage-detector.js';
import { startOutageCoordinator } from '../../src/worker/outage-coordinator.js';
import { clearOutageBackoffs, recoveryPage, releaseProbe } from '../../src/worker/outage-recovery.js';
import { createDeviceKeys, startDistributor, type FakeDistributor } from '../../simulator/distributor.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { captureLog } from '../unit/transports/helpers.js';
import '../support/provided.js';

let db: TestDatabase;
const cleanups: Array<() => Promise<void>> = [];
beforeAll(async () => {
  db = await freshDatabase();
});
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});
afterAll(async () => {
  await db?.drop();
});

const t0 = Date.parse('2026-12-01T10:00:00.000Z');
let nextUser = 1;

interface Device {
  readonly id: string;
  readonly userId: string;
  readonly deviceId: string;
}

async function distributor(): Promise<FakeDistributor> {
  const d = await startDistributor();
  cleanups.push(() => d.close());
  return d;
}

function world(env: Record<string, string> = {}) {
  const captured = captureLog();
  const config = loadConfig('worker', { DATABASE_URL: db.url, PUSH_UP_ALLOW_PRIVATE: 'true', PUSH_UP_ALLOW_HTTP: 'true', ...env });
  const transports: Transports = createTransports(config, captured.log, { unifiedPushDeadlineMs: 2_000, originTagSecret: 'deployment secret' });
  cleanups.push(() => transports.close());
  const activities = createRegistrationActivities({
    pool: db.pool,
    log: captured.log,
    policy: { minIntervalMs: 15_000, rewakeAfterMs: 900_000, fcmBudget: { burst: 0, refillMs: 180_000, dmReserve: 0 } },
    transports,
  });
  return { transports, activities, captured };
}

async function register(transport: TransportName, token: string, keys?: ReturnType<typeof createDeviceKeys>): Promise<Device> {
  const userId = String(nextUser++);
  const deviceId = `phone-${userId}`;
  await db.pool.query(sql.unsafe`INSERT INTO users (id, username) VALUES (${userId}, ${`user${userId}`})`);
  const id = await db.pool.oneFirst(sql.type(z.object({ id: z.string() }))`
    INSERT INTO push_registrations (user_id, device_id, transport, token, up_p256dh, up_auth)
    VALUES (${userId}, ${deviceId}, ${transport}, ${token},
            ${keys === undefined ? null : sql.binary(keys.p256dh)}, ${keys === undefined ? null : sql.binary(keys.auth)})
    RETURNING id::text AS id`);
  return { id, userId, deviceId };
}

async function upDevice(on: FakeDistributor): Promise<Device & { endpoint: string }> {
  const keys = createDeviceKeys();
  const endpoint = on.register(keys);
  return { ...(await register('unifiedpush', endpoint, keys)), endpoint };
}

type World = ReturnType<typeof world>;
const send = (w: World, device: Device, now: number, priority: WakePriority = 'normal'): Promise<SendResult> =>
  w.activities.sendWake({ registrationId: device.id, userId: device.userId, deviceId: device.deviceId, priority, now });

async function row(device: Device) {
  return db.pool.maybeOne(sql.type(z.object({ failures: z.number(), backoff_origin: z.string().nullable() }))`
    SELECT failures, backoff_origin FROM push_registrations WHERE id = ${device.id}`);
}

describe('an outage is a share of the origin’s recently active registrations', () => {
  it('on a busy distributor (20 users), two dead endpoints are pruned after ten failures each and hold nobody back', async () => {
    const w = world();
    const up = await distributor();
    const users = [];
    for (let i = 0; i < 20; i++) users.push(await upDevice(up));
    const dead = [await upDevice(up), await upDevice(up)];
    for (const d of dead) up.answerFor(d.endpoint, { status: 503 });
    const outcomes: string[] = [];
    for (let round = 0; round < maxConsecutiveFailures + 2; round++) {
      const now = t0 + round * 60_000;
      for (const [i, user] of users.entries()) if ((round + i) % 4 === 0) outcomes.push((await send(w, user, now + i)).kind);
      for (const d of dead) if ((await row(d)) !== null) outcomes.push((await send(w, d, now + 100)).kind);
    }
    for (const d of dead) {
      expect(await row(d)).toBeNull();
      expect(up.received.filter((m) => m.endpoint === d.endpoint)).toHaveLength(maxConsecutiveFailures);
    }
    expect(outcomes.filter((o) => o === 'delivered').length).toBe(up.received.filter((m) => m.answered === 201).length);
    expect(w.transports.detector.outages()).toEqual([]);
  });

  it("on a quiet distributor, after two dead endpoints failed, another user's DM is woken at once", async () => {
    const w = world();
    const up = await distributor();
    const dead = [await upDevice(up), await upDevice(up)];
    const friend = await upDevice(up);
    for (const d of dead) up.answerFor(d.endpoint, { status: 503 });
    for (const d of dead) expect(await send(w, d, t0)).toMatchObject({ kind: 'deferred' });
    for (const d of dead) expect(await send(w, d, t0 + 10_000)).toMatchObject({ kind: 'deferred' });
    expect(await send(w, friend, t0 + 10_500, 'high')).toEqual({ kind: 'delivered' });
    for (const d of dead) expect((await row(d))?.failures).toBe(2);
    expect(w.captured.lines.join('\n')).not.toContain('transport-outage');
  });
});

describe('FCM quota answers', () => {
  let oauth: FakeGoogleOAuth;
  let fcm: FakeFcm;
  let env: Record<string, string>;
  beforeAll(async () => {
    const account = createServiceAccount('zippchat-test');
    oauth = await startGoogleOAuth({ account });
    fcm = await startFakeFcm({ projectId: account.projectId, isAuthorized: (bearer) => oauth.isValid(bearer) });
    env = { FCM_PROJECT_ID: account.projectId, FCM_CREDENTIALS_JSON: account.keyFile(oauth.url), FCM_ENDPOINT: fcm.url };
  });
  afterAll(async () => {
    await fcm?.close();
    await oauth?.close();
  });

  it("QUOTA_EXCEEDED about one device is that device's back-off: two throttled devices hold back nobody's DM", async () => {
    const w = world(env);
    const devices: Device[] = [];
    for (let i = 0; i < 5; i++) devices.push(await register('fcm', `quota-${i}:APA91b${'q'.repeat(120)}`));
    for (const d of devices) expect(await send(w, d, t0)).toEqual({ kind: 'delivered' });
    const later = t0 + 3 * 60_000; // FCM's earlier deliveries are no longer in a one-minute window
    fcm.script(fcmError('QUOTA_EXCEEDED'), fcmError('QUOTA_EXCEEDED'));
    for (const d of devices.slice(0, 2)) {
      const result = await send(w, d, later);
      expect(result).toMatchObject({ kind: 'deferred', reason: 'FCM 429 QUOTA_EXCEEDED' });
      expect((result as { until: number }).until).toBeGreaterThanOrEqual(later + 60_000);
      expect(await row(d)).toMatchObject({ failures: 0, backoff_origin: null });
    }
    for (const [i, d] of devices.slice(2).entries()) expect(await send(w, d, later + 1 + i, 'high')).toEqual({ kind: 'delivered' });
    expect(w.transports.detector.outages()).toEqual([]);
  });
});

describe('the same failure from many origins at once', () => {
  it('is ours (every self-hosted distributor refuses our VAPID key): no registration is pruned, and it is said once', async () => {
    const w = world();
    const busy = await distributor();
    const users = [];
    for (let i = 0; i < 5; i++) users.push(await upDevice(busy));
    const alone = [];
    for (let i = 0; i < 4; i++) {
      const own = await distributor();
      own.answerAll({ status: i % 2 === 0 ? 401 : 403 });
      alone.push(await upDevice(own));
    }
    for (let round = 0; round < maxConsecutiveFailures + 5; round++) {
      const now = t0 + round * 60_000;
      for (const user of users) await send(w, user, now);
      for (const device of alone) expect(await send(w, device, now + 1)).toMatchObject({ kind: 'deferred' });
    }
    for (const device of alone) expect((await row(device))?.failures).toBeLessThan(3); // those before it was seen
    const said = w.captured.lines.filter((line) => line.includes('"alert":"transport-shared-failure"'));
    expect(said).toHaveLength(1);
    expect(JSON.parse(said[0]!)).toMatchObject({ reason: 'UnifiedPush 401/403', origins: 3 });
  });
});

describe('in an outage', () => {
  it('the probe goes to a held-back registration that delivered recently, not to a dead endpoint', async () => {
    const w = world();
    const up = await distributor();
    const dead = [await upDevice(up), await upDevice(up), await upDevice(up)];
    const worked = await upDevice(up);
    expect(await send(w, worked, t0)).toEqual({ kind: 'delivered' });
    for (const d of dead) up.answerFor(d.endpoint, { status: 503 });
    for (const d of dead) await send(w, d, t0 + 1_000);
    const key = originKey('unifiedpush', new URL(up.url).origin);
    expect(w.transports.detector.outages()).toEqual([key]);
    // Both held back by the outage with a wake pending; the dead one has the smaller id.
    for (const device of [dead[0]!, worked]) {
      await db.pool.query(sql.unsafe`
        UPDATE push_registrations SET backoff_until = now() + interval '1 hour', backoff_origin = ${key} WHERE id = ${device.id}`);
      await db.pool.query(sql.unsafe`
        INSERT INTO push_pending (registration_id, channel_id, message_count, first_message_id, first_at, last_message_id, is_dm)
        VALUES (${device.id}, 1, 1, 1, now(), 1, true)`);
    }
    const released = await releaseProbe(db.pool, key, w.transports.detector.deliveredRecently(key, t0 + 2_000));
    expect(released.map((r) => r.id)).toEqual([worked.id]);
    // Its send is let through as the probe; the dead endpoint's is not.
    expect(await send(w, dead[0]!, t0 + 6_100)).toMatchObject({ kind: 'deferred', reason: 'unifiedpush outage: held back' });
    expect(await send(w, worked, t0 + 6_200)).toEqual({ kind: 'delivered' });
  });
});

describe('the end of an outage', () => {
  it('clears every back-off it set, in keyset pages on (backoff_origin, id), and no other', async () => {
    const key = 'unifiedpush https://held.example';
    const otherKey = 'unifiedpush https://still-down.example';
    const first = 1_000_000; // clear of the other tests' users
    const held = 2 * recoveryPage + 234;
    await db.pool.query(
      sql.unsafe`INSERT INTO users (id, username) SELECT g, 'held-' || g FROM generate_series(${first}::int8, ${first + held + 99}::int8) g`,
    );
    await db.pool.query(sql.unsafe`
      INSERT INTO push_registrations (user_id, device_id, transport, token, backoff_until, backoff_origin, backoff_reason)
      SELECT g, 'phone', 'unifiedpush', 'https://held.example/' || g, now() + interval '1 hour',
             CASE WHEN g < ${first + 100}::int8 THEN ${otherKey} ELSE ${key} END, 'unifiedpush outage: held back'
      FROM generate_series(${first}::int8, ${first + held + 99}::int8) g`);
    await db.pool.query(sql.unsafe`ANALYZE push_registrations`);

    // Mid-way through, a page reads its own rows only: nothing cleared before it is read
    // again (no rows removed by a filter), nothing sorted.
    const pages: number[] = [];
    const scans: Array<{ read: number; removed: number; sorted: boolean }> = [];
    const { cleared, remaining } = await clearOutageBackoffs(db.pool, key, async (rows) => {
      pages.push(rows.length);
      const last = rows.reduce((max, r) => Math.max(max, Number(r.id)), 0);
      const plan = await db.pool.oneFirst(sql.type(z.object({ 'QUERY PLAN': z.unknown() }))`
        EXPLAIN (ANALYZE, FORMAT JSON)
        SELECT id FROM push_registrations WHERE backoff_origin = ${key} AND id > ${last}::int8 ORDER BY id LIMIT ${recoveryPage} FOR NO KEY UPDATE SKIP LOCKED`);
      scans.push(scanned(plan));
    });
    expect(cleared).toBe(held);
    expect(remaining).toBe(false);
    expect(pages).toEqual([recoveryPage, recoveryPage, 234]);
    for (const scan of scans) expect(scan).toMatchObject({ removed: 0, sorted: false });
    expect(scans.map((s) => s.read)).toEqual([recoveryPage, 234, 0]);
    const left = await db.pool.any(sql.type(z.object({ backoff_origin: z.string().nullable(), n: z.number() }))`
      SELECT backoff_origin, count(*)::int AS n FROM push_registrations WHERE user_id >= ${first} GROUP BY 1 ORDER BY 1`);
    expect(left).toEqual([
      { backoff_origin: otherKey, n: 100 },
      { backoff_origin: null, n: held },
    ]);
  });
});

describe('the end of an outage and the locks of others', () => {
  const key = 'unifiedpush https://locked.example';

  /** A registration held back by the outage of `key`, nothing pending. */
  async function held(): Promise<Device> {
    const device = await register('unifiedpush', `https://locked.example/up/${nextUser}`);
    await db.pool.query(sql.unsafe`
      UPDATE push_registrations SET backoff_until = now() + interval '1 hour', backoff_origin = ${key}, backoff_reason = 'unifiedpush outage: held back'
      WHERE id = ${device.id}`);
    return device;
  }

  /** Holds `lock` on the registration's row in a transaction of its own until `release` is called. */
  async function locked(device: Device, lock: 'FOR KEY SHARE' | 'FOR NO KEY UPDATE'): Promise<{ release: () => Promise<void> }> {
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    await client.query('BEGIN');
    await client.query(`SELECT 1 FROM push_registrations WHERE id = $1 ${lock}`, [device.id]);
    let released = false;
    const release = async () => {
      if (released) return;
      released = true;
      await client.query('COMMIT');
      await client.end();
    };
    cleanups.push(release);
    return { release };
  }

  it('clears a registration the bridge holds FOR KEY SHARE while it records a message for its device', async () => {
    const device = await held();
    await locked(device, 'FOR KEY SHARE'); // what record-events.ts holds on every recipient's registration
    const recovery = await clearOutageBackoffs(db.pool, key, async () => undefined);
    expect(await row(device)).toMatchObject({ backoff_origin: null });
    expect(recovery).toEqual({ cleared: 1, remaining: false });
  });

  it('comes back in a later round for a registration locked throughout the round that recovered the outage', async () => {
    const device = await held();
    const detector = createOutageDetector();
    let outageEnded: (key: string) => void = () => undefined;
    const connection = await Connection.connect({ address: inject('temporalAddress') });
    cleanups.push(() => connection.close());
    const health = startOutageCoordinator({
      pool: db.pool,
      transports: {
        detector,
        onOutageEnd: (listener) => void (outageEnded = listener),
        clock: () => Date.now(),
        configured: [],
        originLabel: createOriginLabeler('deployment secret'),
        fcmTokens: undefined,
      },
      temporal: new Client({ connection }),
      taskQueue: 'outage-locks',
      log: captureLog().log,
      intervalMs: 0,
    });
    cleanups.push(() => health.stop());
    const claim = await locked(device, 'FOR NO KEY UPDATE'); // a claim in flight
    outageEnded(key);
    await health.round();
    expect(await row(device)).toMatchObject({ backoff_origin: key });
    await claim.release();
    await health.round();
    expect(await row(device)).toMatchObject({ backoff_origin: null });
  });
});

/** Rows the plan's scans returned and removed by a filter, and whether it sorted. */
function scanned(plan: unknown): { read: number; removed: number; sorted: boolean } {
  const total = { read: 0, removed: 0, sorted: false };
  const walk = (node: Record<string, unknown>) => {
    if (node['Node Type'] === 'Sort') total.sorted = true;
    if (String(node['Node Type']).includes('Scan')) {
      total.read += Number(node['Actual Rows'] ?? 0);
      total.removed += Number(node['Rows Removed by Filter'] ?? 0);
    }
    for (const child of (node.Plans as Array<Record<string, unknown>> | undefined) ?? []) walk(child);
  };
  walk((plan as Array<{ Plan: Record<string, unknown> }>)[0]!.Plan);
  return total;
}

describe('log lines', () => {
  it('name well-known origins, and show a self-hosted one only as a stable keyed tag', async () => {
    const w = world();
    const up = await distributor();
    const devices = [await upDevice(up), await upDevice(up), await upDevice(up)];
    up.answerAll({ status: 503 });
    for (const d of devices) await send(w, d, t0);
    const host = new URL(up.url).host;
    const key = originKey('unifiedpush', new URL(up.url).origin);
    const warned = w.captured.lines.filter((line) => line.includes('"level":40'));
    expect(warned.some((line) => line.includes('"alert":"transport-outage"'))).toBe(true);
    expect(w.captured.lines.join('\n')).not.toContain(host);
    const tag = createOriginLabeler('deployment secret')(key).origin;
    expect(tag).toMatch(/^self-hosted:[0-9a-f]{16}$/);
    expect(warned.find((line) => line.includes('"alert":"transport-outage"'))).toContain(tag);
    // Stable: the same on another replica of this deployment; another deployment's differs.
    expect(createOriginLabeler('deployment secret')(key).origin).toBe(tag);
    expect(createOriginLabeler('another deployment')(key).origin).not.toBe(tag);
    expect(createOriginLabeler('deployment secret')('unifiedpush https://ntfy.sh')).toEqual({ provider: 'unifiedpush', origin: 'https://ntfy.sh' });
    expect(createOriginLabeler('deployment secret')('fcm https://fcm.googleapis.com')).toEqual({
      provider: 'fcm',
      origin: 'https://fcm.googleapis.com',
    });
  });
});

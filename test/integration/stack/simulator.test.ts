/**
 * The device simulator against a running instance (api, worker, bridge): it registers the way
 * the app does, receives a real wake — decrypted with its own RFC 8291 key, or from the local
 * FCM stand-in — drains what the bridge recorded, and unregisters on the way out. Also as the
 * built command line an operator runs.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../../devstack/daemons.js';
import { parseSimulatorArgs } from '../../../simulator/cli-options.js';
import { runSimulator } from '../../../simulator/run.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { hostFixtures, nextId, type HostFixtures } from '../../support/host-fixtures.js';
import { signDeviceToken, testJwtSecret } from '../../support/jwt.js';
import { runCli } from './cli.js';
import { productHarness, type ProductHarness } from './harness.js';
import { jetstream } from '@nats-io/jetstream';

let db: TestDatabase;
let h: ProductHarness;
let host: HostFixtures;

beforeAll(async () => {
  db = await freshDatabase();
  h = await productHarness(db);
  host = hostFixtures(db.pool);
});
afterAll(async () => {
  await h?.close();
  await db?.drop();
});

/** A DM between a new author and a new reader; `say()` publishes a message in it as the host would. */
async function conversation() {
  const [author, reader] = await host.users(2);
  const dm = await host.dm([author!, reader!]);
  const say = async () => {
    const event = { id: nextId(), channel_id: dm, author_id: author!, created_at: new Date().toISOString() };
    await jetstream(h.nc).publish(`${h.subjectPrefix}channel.${dm}.MESSAGE_CREATE`, JSON.stringify(event));
    return event.id;
  };
  return { reader: reader!, dm, say };
}

/** The device signs in on the host: the api registers only a device with a live session. */
async function signIn(userId: string, deviceId: string) {
  await db.pool.query(
    sql.unsafe`INSERT INTO refresh_tokens (user_id, device_id, expires_at) VALUES (${userId}, ${deviceId}, now() + interval '1 day')`,
  );
}

/** Simulator options from a command line, for the device `deviceId` of `reader`. */
async function options(reader: string, deviceId: string, extra: string[] = []) {
  await signIn(reader, deviceId);
  const jwt = await signDeviceToken({ userId: reader, deviceId, secret: testJwtSecret });
  return parseSimulatorArgs(['--api', h.api.url, '--token', jwt, '--wakes', '1', '--timeout', '30', ...extra]);
}

describe('simulate-device', () => {
  it('UnifiedPush: receives the wake, decrypts it with its own key, drains the DM, unregisters', async () => {
    const { reader, dm, say } = await conversation();
    const lines: string[] = [];
    let messageId = '';
    const summary = await runSimulator(await options(reader, 'sim-up'), {
      out: (line) => void lines.push(line),
      onRegistered: async () => void (messageId = await say()),
    });
    expect(summary).toEqual({ wakes: 1, problems: 0, timedOut: false });
    const text = lines.join('\n');
    expect(text).toContain('registered: UnifiedPush via the distributor at http://127.0.0.1:');
    expect(text).toMatch(/wake via UnifiedPush, Urgency high, 123-byte RFC 8291 record, decrypted with the phone's key: \{"v":"1","t":"wake"\}/);
    expect(text).toContain(`DM ${dm}: 1 message, messages ${messageId}…${messageId}`);
    expect(text).toContain('unregistered');
    const token = await signDeviceToken({ userId: reader, deviceId: 'sim-up', secret: testJwtSecret });
    expect((await h.api.request('GET', '/api/push/registration', { token })).status).toBe(404);
  });

  it('FCM against the local stand-in, JSON lines, registration kept on request', async () => {
    const { reader, dm, say } = await conversation();
    const lines: string[] = [];
    const summary = await runSimulator(
      await options(reader, 'sim-fcm', ['--transport', 'fcm', '--fcm-stand-in', h.fcm.url, '--json', '--keep-registration']),
      {
        out: (line) => void lines.push(line),
        onRegistered: async () => void (await say()),
      },
    );
    expect(summary.wakes).toBe(1);
    const events = lines.map(
      (line) => JSON.parse(line) as { event: string; wake?: Record<string, unknown>; items?: Array<Record<string, unknown>>; registration?: unknown },
    );
    expect(events.map((e) => e.event)).toEqual(['config', 'registered', 'waiting', 'wake', 'drained']);
    expect(events[1]!.registration).toMatchObject({ transport: 'fcm' });
    expect(events[3]!.wake).toMatchObject({ transport: 'fcm', priority: 'high', payload: '{"v":"1","t":"wake"}', problems: [] });
    expect(events[4]!.items).toEqual([expect.objectContaining({ channel_id: dm, is_dm: true, message_count: 1 })]);
    const token = await signDeviceToken({ userId: reader, deviceId: 'sim-fcm', secret: testJwtSecret });
    expect((await h.api.request('GET', '/api/push/registration', { token })).json).toMatchObject({ transport: 'fcm' });
  });

  it("FCM lowering its HIGH wakes: the phone says so on draining, and the device's delivery state shows it", async () => {
    const { reader, say } = await conversation();
    const lines: string[] = [];
    const token = await signDeviceToken({ userId: reader, deviceId: 'sim-lowered', secret: testJwtSecret });
    const summary = await runSimulator(
      await options(reader, 'sim-lowered', ['--transport', 'fcm', '--fcm-stand-in', h.fcm.url, '--fcm-lower-high', '--keep-registration']),
      {
        out: (line) => void lines.push(line),
        onRegistered: async () => void (await say()),
      },
    );
    expect(summary.wakes).toBe(1);
    expect(lines.join('\n')).toContain('wake via FCM, priority NORMAL (sent HIGH: lowered by FCM)');
    const state = (await h.api.request('GET', '/api/push/registration', { token })).json as { delivery: Record<string, unknown> };
    expect(state.delivery).toMatchObject({ priority_lowered: true, wakes_since_drain: 0 });
    const count = await db.pool.oneFirst(sql.unsafe`
      SELECT priority_lowered_wakes FROM push_registrations WHERE user_id = ${reader} AND device_id = 'sim-lowered'`);
    expect(count).toBe(1);
  });

  it('UnifiedPush without keys gets the wake in the clear', async () => {
    const { reader, say } = await conversation();
    const lines: string[] = [];
    await runSimulator(await options(reader, 'sim-clear', ['--no-keys']), {
      out: (line) => void lines.push(line),
      onRegistered: async () => void (await say()),
    });
    expect(lines.join('\n')).toContain('20 bytes in the clear: {"v":"1","t":"wake"}');
  });

  describe('as the built command', () => {
    let secretFile: string;
    beforeAll(() => {
      secretFile = path.join(mkdtempSync(path.join(tmpdir(), 'simulate-')), 'jwt-secret');
      writeFileSync(secretFile, `${testJwtSecret}\n`);
    });

    it('mints its token from a secret file, prints the wake and the drain, exits 0', async () => {
      const { reader, dm, say } = await conversation();
      await signIn(reader, 'cli-phone');
      const run = runCli('simulate-device', [
        '--api',
        h.api.url,
        '--jwt-secret-file',
        secretFile,
        '--user',
        reader,
        '--device',
        'cli-phone',
        '--wakes',
        '1',
        '--timeout',
        '30',
      ]);
      await waitFor('the simulator to wait for wakes', async () => run.output().includes('waiting for wakes'), 30_000);
      await say();
      expect(await run.exit).toBe(0);
      expect(run.output()).toContain('decrypted with the phone\'s key: {"v":"1","t":"wake"}');
      expect(run.output()).toContain(`DM ${dm}: 1 message`);
    });

    it('exits 2 when no wake comes in time, 1 with its usage on a bad command line', async () => {
      const { reader } = await conversation();
      await signIn(reader, 'idle-phone');
      const quiet = runCli('simulate-device', [
        '--api',
        h.api.url,
        '--jwt-secret-file',
        secretFile,
        '--user',
        reader,
        '--device',
        'idle-phone',
        '--wakes',
        '1',
        '--timeout',
        '1',
      ]);
      expect(await quiet.exit).toBe(2);
      expect(quiet.output()).toContain('no wake within the timeout');
      const bad = runCli('simulate-device', ['--jwt-secret-file', secretFile]);
      expect(await bad.exit).toBe(1);
      expect(bad.output()).toContain('--api is required');
      expect(bad.output()).toContain('usage: simulate-device');
    });
  });
});

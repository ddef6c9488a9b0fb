/**
 * The UnifiedPush transport against a fake distributor on loopback that decrypts with the
 * device's private key and checks every header. These endpoints are on 127.0.0.1, so the
 * transports here allow private addresses and http; ssrf.test.ts covers the refusals.
 */
import { vapidPrivateKey } from '../../support/vapid-key.js';
import { createECDH } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createSenders, type TransportOptions } from '../../../src/transports/index.js';
import type { ProviderAnswer } from '../../../src/transports/types.js';
import { createDeviceKeys, expectedWake, startDistributor, type DistributorAnswer, type DistributorOptions } from '../../../simulator/distributor.js';
import { captureLog, eventually, inBatches, upRegistration, workerConfig } from './helpers.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

const loopbackDev = { PUSH_UP_ALLOW_PRIVATE: 'true', PUSH_UP_ALLOW_HTTP: 'true' };

async function world(env: Record<string, string> = {}, options: TransportOptions = {}, distributorOptions: DistributorOptions = {}) {
  const distributor = await startDistributor(distributorOptions);
  const transports = createSenders(workerConfig({ ...loopbackDev, ...env }), captureLog().log, options);
  cleanups.push(async () => {
    await transports.close();
    await distributor.close();
  });
  return { distributor, transport: transports.unifiedpush };
}

describe('UnifiedPush on the wire', () => {
  it('delivers the RFC 8291-encrypted wake that the device decrypts, with TTL, Topic and Urgency', async () => {
    const { distributor, transport } = await world();
    const device = createDeviceKeys();
    const endpoint = distributor.register(device);

    expect(await transport.send(upRegistration(endpoint, device), 'high')).toEqual({ kind: 'delivered', status: 201 });
    expect(await transport.send(upRegistration(endpoint, device), 'normal')).toEqual({ kind: 'delivered', status: 201 });

    expect(distributor.problems).toEqual([]);
    expect(distributor.received.map((m) => [m.plaintext, m.urgency, m.ttl, m.topic, m.contentEncoding])).toEqual([
      [expectedWake, 'high', '3600', 'wake', 'aes128gcm'],
      [expectedWake, 'normal', '3600', 'wake', 'aes128gcm'],
    ]);
    expect(distributor.received.every((m) => !m.vapid)).toBe(true);
  });

  it('posts the constant wake in the clear for a device that gave no keys', async () => {
    const { distributor, transport } = await world();
    const endpoint = distributor.register();
    expect(await transport.send(upRegistration(endpoint), 'normal')).toEqual({ kind: 'delivered', status: 201 });
    expect(distributor.problems).toEqual([]);
    expect(distributor.received[0]).toMatchObject({ plaintext: expectedWake, contentEncoding: undefined, bodyBytes: 20 });
  });

  it('signs with VAPID when a key is configured, and the distributor bound to it accepts', async () => {
    const vapid = createECDH('prime256v1');
    vapid.generateKeys();
    const { distributor, transport } = await world(
      { PUSH_VAPID_PRIVATE_KEY: vapidPrivateKey(vapid), PUSH_VAPID_SUBJECT: 'mailto:ops@chat.example' },
      {},
      { vapidPublicKey: vapid.getPublicKey().toString('base64url') },
    );
    const device = createDeviceKeys();
    expect(await transport.send(upRegistration(distributor.register(device), device), 'high')).toEqual({ kind: 'delivered', status: 201 });
    expect(distributor.problems).toEqual([]);
    expect(distributor.received[0]?.vapid).toBe(true);
  });

  it('keeps the body size constant across 1,000 sends, per key presence', async () => {
    const { distributor, transport } = await world();
    const device = createDeviceKeys();
    const withKeys = upRegistration(distributor.register(device), device);
    const clear = upRegistration(distributor.register());

    const outcomes = await inBatches(2000, 25, (i) => transport.send(i % 2 === 0 ? withKeys : clear, i % 4 < 2 ? 'high' : 'normal'));

    expect(outcomes.every((o) => o.kind === 'delivered')).toBe(true);
    expect(distributor.problems).toEqual([]);
    const sizes = (encoding: string | undefined) =>
      new Set(distributor.received.filter((m) => m.contentEncoding === encoding).map((m) => m.bodyBytes));
    expect([...sizes('aes128gcm')]).toEqual([123]); // 86 header + 20 wake + 1 delimiter + 16 tag
    expect([...sizes(undefined)]).toEqual([20]);
    expect(distributor.received).toHaveLength(2000);
    // RFC 8291 §3.2: a fresh sender key and salt for every message.
    const encrypted = distributor.received.filter((m) => m.contentEncoding === 'aes128gcm');
    expect(new Set(encrypted.map((m) => m.salt)).size).toBe(1000);
    expect(new Set(encrypted.map((m) => m.senderKey)).size).toBe(1000);
  }, 60_000); // 2,000 encryptions and requests: seconds on a loaded machine
});

describe('UnifiedPush answers → outcomes', () => {
  const cases: Array<[string, DistributorAnswer, ProviderAnswer]> = [
    ['200 (ntfy)', { status: 200 }, { kind: 'delivered', status: 200 }],
    ['201 (RFC 8030)', { status: 201 }, { kind: 'delivered', status: 201 }],
    ['202', { status: 202 }, { kind: 'delivered', status: 202 }],
    ['404', { status: 404 }, { kind: 'dead', reason: 'UnifiedPush 404: endpoint gone' }],
    ['410', { status: 410 }, { kind: 'dead', reason: 'UnifiedPush 410: endpoint gone' }],
    [
      '429 with Retry-After',
      { status: 429, headers: { 'retry-after': '30' } },
      { kind: 'deferred', cause: 'rate_limited', reason: 'UnifiedPush 429: rate limited', retryAfterMs: 30_000 },
    ],
    ['429 without Retry-After', { status: 429 }, { kind: 'deferred', cause: 'rate_limited', reason: 'UnifiedPush 429: rate limited' }],
    ['500', { status: 500 }, { kind: 'deferred', cause: 'failing', reason: 'UnifiedPush 500', blame: 'endpoint' }],
    [
      '503 with Retry-After',
      { status: 503, headers: { 'retry-after': '4' } },
      { kind: 'deferred', cause: 'failing', reason: 'UnifiedPush 503', blame: 'endpoint', retryAfterMs: 4_000 },
    ],
    ['507 (ntfy: no subscriber yet)', { status: 507 }, { kind: 'deferred', cause: 'failing', reason: 'UnifiedPush 507', blame: 'endpoint' }],
    ['413', { status: 413 }, { kind: 'deferred', cause: 'failing', reason: 'UnifiedPush 413', blame: 'endpoint' }],
    ['401', { status: 401 }, { kind: 'deferred', cause: 'failing', reason: 'UnifiedPush 401', blame: 'endpoint' }],
    [
      'a Retry-After of a year is capped at an hour',
      { status: 503, headers: { 'retry-after': '31536000' } },
      { kind: 'deferred', cause: 'failing', reason: 'UnifiedPush 503', blame: 'endpoint', retryAfterMs: 3_600_000 },
    ],
  ];

  it.each(cases)('%s', async (_name, answer, expected) => {
    const { distributor, transport } = await world();
    const device = createDeviceKeys();
    distributor.script(answer);
    expect(await transport.send(upRegistration(distributor.register(device), device), 'high')).toEqual(expected);
    expect(distributor.problems).toEqual([]);
  });

  it('does not follow a redirect, not even to a listener it could reach', async () => {
    const target = await countingServer();
    const { distributor, transport } = await world();
    distributor.script({ status: 307, headers: { location: target.url } });
    const device = createDeviceKeys();
    expect(await transport.send(upRegistration(distributor.register(device), device), 'high')).toEqual({
      kind: 'deferred',
      cause: 'failing',
      reason: 'UnifiedPush 307: redirect not followed',
      blame: 'endpoint',
    });
    distributor.script({ status: 301, headers: { location: target.url } });
    expect(await transport.send(upRegistration(distributor.register(device), device), 'high')).toMatchObject({ kind: 'deferred', cause: 'failing' });
    expect(target.connections()).toBe(0);
  });

  it('gives up at the deadline on a distributor that never answers', async () => {
    const { distributor, transport } = await world({}, { unifiedPushDeadlineMs: 300 });
    distributor.script({ hang: true });
    const device = createDeviceKeys();
    expect(await transport.send(upRegistration(distributor.register(device), device), 'high')).toEqual({
      kind: 'deferred',
      cause: 'failing',
      reason: 'timeout',
      blame: 'network',
    });
  });

  it('reports a refused connection as failing', async () => {
    const { distributor, transport } = await world();
    const endpoint = distributor.register();
    await distributor.close();
    expect(await transport.send(upRegistration(endpoint), 'high')).toEqual({
      kind: 'deferred',
      cause: 'failing',
      reason: 'connection refused',
      blame: 'network',
    });
  });

  it('reads no more than a small cap of an endless answer', async () => {
    const total = 256 * 1024 * 1024;
    const server = await endlessServer(total);
    const transports = createSenders(workerConfig(loopbackDev), captureLog().log);
    cleanups.push(() => transports.close());

    expect(await transports.unifiedpush.send(upRegistration(`${server.url}/up/x`), 'high')).toEqual({ kind: 'delivered', status: 200 });

    await eventually(() => server.closedAfter() !== undefined);
    expect(server.closedAfter()).toBeLessThan(total / 4); // socket buffers hold a few MiB at most
  });
});

describe('UnifiedPush endpoints that can never work', () => {
  it.each([
    ['not a URL', 'ntfy.example/up/abc', 'endpoint is not a URL'],
    ['http without PUSH_UP_ALLOW_HTTP', 'http://ntfy.example/up/abc', 'endpoint scheme http: not allowed'],
    ['another scheme', 'ftp://ntfy.example/up/abc', 'endpoint scheme ftp: not allowed'],
    ['credentials in the URL', 'https://user:pw@ntfy.example/up/abc', 'endpoint carries credentials'],
  ])('%s → dead', async (_name, endpoint, reason) => {
    const transports = createSenders(workerConfig(), captureLog().log);
    cleanups.push(() => transports.close());
    expect(await transports.unifiedpush.send(upRegistration(endpoint), 'high')).toEqual({ kind: 'dead', reason });
  });

  it('a receiver key that is not on the curve → dead, and nothing is sent', async () => {
    const { distributor, transport } = await world();
    const bogus = { p256dh: Buffer.concat([Buffer.from([4]), Buffer.alloc(64, 7)]), auth: Buffer.alloc(16, 1), privateKey: createECDH('prime256v1') };
    const outcome = await transport.send(upRegistration(distributor.register(bogus), bogus), 'high');
    expect(outcome).toMatchObject({ kind: 'dead', reason: expect.stringContaining('keys are unusable') as string });
    expect(distributor.received).toHaveLength(0);
  });
});

/** An HTTP server on loopback that answers 201 and counts TCP connections. */
async function countingServer(): Promise<{ url: string; connections(): number }> {
  let connections = 0;
  const server = createServer((_req, res) => res.writeHead(201).end());
  server.on('connection', () => connections++);
  const url = await listen(server);
  return { url, connections: () => connections };
}

/** Answers 200 with `total` bytes, produced only as fast as the client reads them. */
async function endlessServer(total: number): Promise<{ url: string; closedAfter(): number | undefined }> {
  let closedAfter: number | undefined;
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  const server = createServer((req, res) => {
    res.writeHead(200, { 'content-length': total });
    let sent = 0;
    const body = new Readable({
      read() {
        if (sent >= total) return void this.push(null);
        sent += chunk.length;
        this.push(chunk);
      },
    });
    const socket = res.socket;
    socket?.once('close', () => (closedAfter = socket.bytesWritten));
    body.pipe(res);
    req.resume();
  });
  const url = await listen(server);
  return { url, closedAfter: () => closedAfter };
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

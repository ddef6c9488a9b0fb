/**
 * An endpoint is attacker-chosen. With the production default (PUSH_UP_ALLOW_PRIVATE=false)
 * no form of a loopback, private, link-local or otherwise non-public address may get a single
 * TCP connection: a dual-stack listener on loopback counts every connection it receives, and
 * must count none — while the same request with private addresses allowed does reach it,
 * which proves the listener would have counted.
 */
import { promises as dns, type LookupAddress } from 'node:dns';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSenders, type Senders } from '../../../src/transports/index.js';
import { captureLog, upRegistration, workerConfig } from './helpers.js';

let connections = 0;
let port = 0;
const listener = createServer((_req, res) => res.writeHead(201).end());
listener.on('connection', () => connections++);

/** Names the injected resolver answers as a hostile DNS zone would; others go to the system. */
const zone: Record<string, LookupAddress[]> = {
  'rebind.push.test': [{ address: '127.0.0.1', family: 4 }],
  'mapped.push.test': [{ address: '::ffff:127.0.0.1', family: 6 }],
  'v6-loopback.push.test': [{ address: '::1', family: 6 }],
  'mixed.push.test': [
    { address: '93.184.215.14', family: 4 },
    { address: '127.0.0.1', family: 4 },
  ],
  'metadata.push.test': [{ address: '169.254.169.254', family: 4 }],
};
const resolve = async (hostname: string, family: number): Promise<LookupAddress[]> => zone[hostname] ?? dns.lookup(hostname, { all: true, family });

let guarded: Senders;
let open: Senders;

beforeAll(async () => {
  await new Promise<void>((done) => listener.listen({ port: 0, host: '::', ipv6Only: false }, done));
  port = (listener.address() as AddressInfo).port;
  guarded = createSenders(workerConfig({ PUSH_UP_ALLOW_HTTP: 'true' }), captureLog().log, { resolve });
  open = createSenders(workerConfig({ PUSH_UP_ALLOW_HTTP: 'true', PUSH_UP_ALLOW_PRIVATE: 'true' }), captureLog().log, { resolve });
});

afterAll(async () => {
  await guarded.close();
  await open.close();
  listener.closeAllConnections();
  await new Promise<void>((done) => listener.close(() => done()));
});

const endpoint = (host: string) => `http://${host}:${port}/up/secret-topic`;

describe('refused without a TCP connection', () => {
  // [URL host, why]: IP literals are judged before dialling and can never become acceptable (dead).
  const literals: Array<[string, string]> = [
    ['127.0.0.1', 'loopback'],
    ['127.1', 'loopback (short form, normalised by the URL parser)'],
    ['2130706433', 'loopback (decimal form)'],
    ['0x7f.0.0.1', 'loopback (hex form)'],
    ['0.0.0.0', 'this network: reaches the local host on Linux'],
    ['[::]', 'unspecified: reaches ::1 on Linux'],
    ['[::1]', 'IPv6 loopback'],
    ['[::ffff:127.0.0.1]', 'IPv4-mapped loopback'],
    ['[::ffff:0:127.0.0.1]', 'IPv4-translated loopback'],
    ['[::127.0.0.1]', 'IPv4-compatible loopback'],
    ['[64:ff9b::127.0.0.1]', 'NAT64 form of loopback'],
    ['[64:ff9b::10.0.0.1]', 'NAT64 form of a private address'],
    ['[2002:7f00:1::1]', '6to4 form of loopback'],
    ['[2002:a9fe:a9fe::1]', '6to4 form of the metadata address'],
    ['[2001:0:4136:e378:8000:63bf:3fff:fdd2]', 'Teredo'],
    ['10.0.0.1', 'private'],
    ['172.16.5.4', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['169.254.169.254', 'cloud metadata (link-local)'],
    ['[fd00:ec2::254]', 'cloud metadata over IPv6 (unique local)'],
    ['[fe80::1]', 'IPv6 link-local'],
    ['[fc00::1]', 'unique local'],
    ['192.0.2.1', 'documentation'],
    ['198.18.0.1', 'benchmarking'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'broadcast'],
    ['224.0.0.1', 'multicast'],
  ];

  it.each(literals)('%s (%s)', async (host) => {
    const before = connections;
    const outcome = await guarded.unifiedpush.send(upRegistration(endpoint(host)), 'high');
    expect(outcome).toMatchObject({ kind: 'dead', reason: expect.stringMatching(/^address refused: /) as string });
    expect(connections - before).toBe(0);
  });

  // Host names are judged on what they resolve to, inside the connection's own lookup.
  const names: Array<[string, string]> = [
    ['localhost', 'the system resolver says loopback'],
    ['rebind.push.test', 'a public-looking name pointing at 127.0.0.1'],
    ['mapped.push.test', 'a name answering an IPv4-mapped loopback'],
    ['v6-loopback.push.test', 'a name answering ::1'],
    ['mixed.push.test', 'a name answering a public and a loopback address'],
    ['metadata.push.test', 'a name answering the metadata address'],
  ];

  it.each(names)('%s (%s)', async (host) => {
    const before = connections;
    const outcome = await guarded.unifiedpush.send(upRegistration(endpoint(host)), 'high');
    // A name may resolve elsewhere later: failing, and ten in a row prune it.
    expect(outcome).toMatchObject({ kind: 'deferred', cause: 'failing', reason: expect.stringMatching(/^address refused: /) as string });
    expect(connections - before).toBe(0);
  });
});

describe('the listener does count', () => {
  it('with PUSH_UP_ALLOW_PRIVATE the same endpoints connect', async () => {
    const before = connections;
    expect(await open.unifiedpush.send(upRegistration(endpoint('rebind.push.test')), 'high')).toEqual({ kind: 'delivered', status: 201 });
    expect(await open.unifiedpush.send(upRegistration(endpoint('[::1]')), 'high')).toEqual({ kind: 'delivered', status: 201 });
    expect(connections).toBeGreaterThan(before);
  });
});

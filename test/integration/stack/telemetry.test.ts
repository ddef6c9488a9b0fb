/**
 * What an operator's log pipeline and trace collector receive from the three built processes,
 * run as in production with `OTEL_EXPORTER_OTLP_ENDPOINT` pointing at a loopback OTLP/HTTP
 * receiver (their own NATS here, so no other test file's bridge shares the stream):
 *
 * - one DM published with the chat server's `traceparent` becomes one connected trace: the
 *   bridge's event, recording and signalling spans, Temporal's client and workflow spans, the
 *   claim, the send and the provider's call, and the drain that took the message — every span a
 *   child of the chat server's span or of another span of the trace;
 * - a DM to a device whose workflow the message starts also carries Temporal's workflow-run
 *   and activity spans;
 * - no span, event or link attribute holds a user, device, channel or message id, a workflow id,
 *   an endpoint or a key; only the attributes of src/tracing/redact.ts leave the process;
 * - every line each process writes is JSON with its level as a label, and the api's access line
 *   carries the caller's X-Request-Id, which the response echoes.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { headers as natsHeaders, connect } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../../devstack/daemons.js';
import { createDeviceKeys, startDistributor, type LocalDistributor } from '../../../simulator/distributor.js';
import { spanAttribute } from '../../../src/tracing/redact.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { hostFixtures, nextId } from '../../support/host-fixtures.js';
import { signDeviceToken, testJwtSecret } from '../../support/jwt.js';
import { startOwnNatsProduct, type OwnNatsProduct, type ProcessName } from '../../support/own-nats-product.js';
import { nonJsonLines } from '../../support/processes.js';

interface ReceivedSpan {
  readonly service: string;
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string;
  readonly name: string;
  readonly attributes: Record<string, unknown>;
  readonly eventAttributes: Record<string, unknown>[];
  readonly links: Array<{ traceId: string; spanId: string; attributes: Record<string, unknown> }>;
}

let db: TestDatabase;
let natsUrl = '';
let distributor: LocalDistributor;
let receiver: { server: Server; url: string; spans: ReceivedSpan[]; problems: string[] };
let product: OwnNatsProduct | undefined;
const urls = { api: '', worker: '', bridge: '' };
const processOutput = (name: ProcessName) => product!.processes.find((p) => p.name === name)!.process.output();

beforeAll(async () => {
  db = await freshDatabase();
  distributor = await startDistributor();
  receiver = await startOtlpReceiver();
  product = await startOwnNatsProduct(db.url, 'telemetry', { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, LOG_LEVEL: 'debug' });
  Object.assign(urls, product.urls);
  natsUrl = product.natsUrl;
});

afterAll(async () => {
  await product?.stop();
  await distributor?.close();
  await new Promise((resolve) => receiver?.server.close(resolve));
  await db?.drop();
});

/** Everything a device could be identified by, which no span may carry. */
const secrets: string[] = [];

async function phone(userId: string, deviceId: string, register: boolean) {
  const keys = createDeviceKeys();
  const endpoint = distributor.register(keys);
  const token = await signDeviceToken({ userId, deviceId, secret: testJwtSecret });
  await db.pool.query(
    sql.unsafe`INSERT INTO refresh_tokens (user_id, device_id, expires_at) VALUES (${userId}, ${deviceId}, now() + interval '1 day')`,
  );
  const p256dh = keys.p256dh.toString('base64url');
  const auth = keys.auth.toString('base64url');
  if (register) {
    const put = await fetch(`${urls.api}/api/push/registration`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ transport: 'unifiedpush', token: endpoint, p256dh, auth }),
    });
    expect(put.status).toBe(200);
    // The registration's workflow is started by the bridge's signaller (the start is owed in the
    // outbox): a phone registered before the message has its workflow running when it comes.
    await waitFor(
      "the registration's workflow started",
      async () => (await db.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM push_signal_outbox`)) === 0,
      60_000,
    );
  } else {
    // Registered before its workflow exists (as after a restore): the message's signal starts it.
    await db.pool.query(sql.unsafe`
      INSERT INTO push_registrations (user_id, device_id, transport, token, up_p256dh, up_auth)
      VALUES (${userId}, ${deviceId}, 'unifiedpush', ${endpoint}, ${sql.binary(keys.p256dh)}, ${sql.binary(keys.auth)})`);
  }
  secrets.push(userId, deviceId, endpoint, new URL(endpoint).pathname, p256dh, auth, token, `push-device:${userId}:${deviceId}`);
  return { endpoint, token };
}

/** Publishes a DM as the chat server would, inside its own trace; the trace id and the chat server's span id. */
async function publishDm(channelId: string, authorId: string): Promise<{ traceId: string; parentSpanId: string; messageId: string }> {
  const traceId = randomBytes(16).toString('hex');
  const parentSpanId = randomBytes(8).toString('hex');
  const messageId = nextId();
  const h = natsHeaders();
  h.set('traceparent', `00-${traceId}-${parentSpanId}-01`);
  const nc = await connect({ servers: natsUrl });
  const event = { id: messageId, channel_id: channelId, author_id: authorId, created_at: new Date().toISOString() };
  await jetstream(nc).publish(`channel.${channelId}.MESSAGE_CREATE`, JSON.stringify(event), { headers: h });
  await nc.close();
  secrets.push(messageId);
  return { traceId, parentSpanId, messageId };
}

/** A DM from a new user to a new user's phone, published in the chat server's trace, once its wake arrived. */
async function dmToPhone(deviceId: string, register: boolean) {
  const host = hostFixtures(db.pool);
  const [alice, recipient] = await host.users(2);
  const dm = await host.dm([alice!, recipient!]);
  secrets.push(dm);
  const recipientPhone = await phone(recipient!, deviceId, register);
  const message = await publishDm(dm, alice!);
  await waitFor('the wake', async () => distributor.received.some((m) => m.endpoint === recipientPhone.endpoint), 60_000);
  return { ...recipientPhone, message };
}

async function drain(token: string, requestId: string): Promise<Response> {
  return fetch(`${urls.api}/api/push/drain`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'x-request-id': requestId } });
}

const spansOf = (traceId: string) => receiver.spans.filter((s) => s.traceId === traceId);
const names = (traceId: string) => new Set(spansOf(traceId).map((s) => s.name));

/** Waits until the receiver has spans of these names in the trace (the processes export every 2 s). */
async function traceHolding(traceId: string, expected: readonly string[]): Promise<void> {
  await waitFor(`the spans of trace ${traceId}`, async () => expected.every((name) => names(traceId).has(name)), 60_000).catch((error: unknown) => {
    throw new Error(`${String(error)}; received: ${[...names(traceId)].join(', ')}; problems: ${receiver.problems.join('; ')}`);
  });
}

/** Every span's parent is the chat server's span or another span of the trace. */
function unconnected(traceId: string, rootParent: string): string[] {
  const spans = spansOf(traceId);
  const ids = new Set(spans.map((s) => s.spanId));
  return spans.filter((s) => s.parentSpanId !== rootParent && !ids.has(s.parentSpanId)).map((s) => `${s.service} ${s.name}`);
}

/** The bridge's spans of a DM (its signal-with-start unpaced), and the wake's, to the drain. */
const bridgeSpans = ['push.bridge.event', 'push.record', 'push.signal', 'SignalWithStartWorkflow:registrationWorkflow'];
const wakeSpans = ['push.claim', 'push.send', 'push.provider', 'push.drain'];

describe('one message, traced end to end', () => {
  it('a DM to a registered phone is one connected trace, from the bridge to the drain that took it', async () => {
    const { token, message } = await dmToPhone('bob-phone', true);
    const response = await drain(token, 'edge-7f3a91c2');
    expect(response.status).toBe(200);
    expect(response.headers.get('x-request-id')).toBe('edge-7f3a91c2');

    await traceHolding(message.traceId, [...bridgeSpans, 'HandleSignal:pending', ...wakeSpans]);
    expect(unconnected(message.traceId, message.parentSpanId)).toEqual([]);
    const byName = new Map(spansOf(message.traceId).map((s) => [s.name, s]));
    expect(byName.get('push.bridge.event')?.parentSpanId).toBe(message.parentSpanId);
    expect(byName.get('push.bridge.event')?.service).toBe('zippchat-push-bridge');
    expect(byName.get('push.claim')).toMatchObject({
      service: 'zippchat-push-worker',
      attributes: { 'push.outcome': 'claimed', 'push.priority': 'high' },
    });
    expect(byName.get('push.provider')?.attributes).toMatchObject({ 'push.transport': 'unifiedpush', 'push.outcome': 'delivered' });
    expect(byName.get('push.drain')).toMatchObject({ service: 'zippchat-push-api', attributes: { 'push.rows': 1 } });
    expect(byName.get('HandleSignal:pending')?.service).toBe('zippchat-push-worker');
  });

  it("a DM that starts its device's workflow also carries Temporal's run and activity spans", async () => {
    const carolPhone = await dmToPhone('carol-phone', false);
    const message = carolPhone.message;
    expect((await drain(carolPhone.token, 'edge-0b1c2d3e')).status).toBe(200);
    // The run's span ends with the run: the registration goes, its workflow ends.
    expect(
      (await fetch(`${urls.api}/api/push/registration`, { method: 'DELETE', headers: { authorization: `Bearer ${carolPhone.token}` } })).status,
    ).toBe(204);

    // A run begun today claims and sends in one local activity.
    const temporalRun = ['RunWorkflow:registrationWorkflow', 'StartActivity:claimAndSendWake', 'RunActivity:claimAndSendWake'];
    await traceHolding(message.traceId, [...bridgeSpans, ...temporalRun, ...wakeSpans]);
    expect(unconnected(message.traceId, message.parentSpanId)).toEqual([]);
    // Our claim is linked to Temporal's activity span it ran in.
    const claim = spansOf(message.traceId).find((s) => s.name === 'push.claim')!;
    const run = spansOf(message.traceId).find((s) => s.name === 'RunActivity:claimAndSendWake')!;
    expect(claim.links.map((l) => l.spanId)).toContain(run.spanId);
  });

  it('no span carries an id, an endpoint, a key or a token; only the attributes the service sets leave a process', () => {
    expect(receiver.spans.length).toBeGreaterThan(15);
    expect(receiver.problems).toEqual([]);
    const allowed = new Set<string>(Object.values(spanAttribute));
    const found: string[] = [];
    for (const span of receiver.spans) {
      const bags = [span.attributes, ...span.eventAttributes, ...span.links.map((l) => l.attributes)];
      for (const bag of bags) {
        for (const [key, value] of Object.entries(bag)) {
          if (!allowed.has(key) && key !== 'exception.type') found.push(`${span.name}: attribute ${key}`);
          const text = JSON.stringify(value) ?? String(value);
          for (const secret of secrets) if (text.includes(secret)) found.push(`${span.name}: ${key} holds ${secret.slice(0, 12)}…`);
        }
      }
      if (secrets.some((secret) => span.name.includes(secret))) found.push(`span name ${span.name}`);
    }
    expect(found).toEqual([]);
  });
});

describe('every line is JSON', () => {
  it('each process writes JSON lines only, with the level as a label; the api logs each request with its id', () => {
    for (const { name } of product!.processes) {
      expect(nonJsonLines(processOutput(name)), `${name}: lines that are not JSON`).toEqual([]);
      const lines = processOutput(name).trim().split('\n');
      const levels = new Set(lines.map((line) => (JSON.parse(line) as { level: unknown }).level));
      for (const level of levels) expect(['trace', 'debug', 'info', 'warn', 'error', 'fatal'], `${name}: level ${String(level)}`).toContain(level);
    }
    const worker = processOutput('worker');
    // The Temporal SDK's own lines are among them, with their fields.
    expect(worker).toMatch(/"sdkComponent":"worker"/);
    const api = processOutput('api').trim().split('\n');
    const access = api.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.reqId === 'edge-7f3a91c2');
    expect(access).toMatchObject({ level: 'info', msg: 'request', method: 'POST', route: '/api/push/drain', status: 200 });
  });
});

// --- A loopback OTLP/HTTP receiver (JSON) ---------------------------------------------------

type OtlpValue = {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
  arrayValue?: { values: OtlpValue[] };
};
type OtlpAttributes = Array<{ key: string; value: OtlpValue }> | undefined;
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes?: OtlpAttributes;
  events?: Array<{ attributes?: OtlpAttributes }>;
  links?: Array<{ traceId: string; spanId: string; attributes?: OtlpAttributes }>;
}
interface OtlpRequest {
  resourceSpans?: Array<{ resource?: { attributes?: OtlpAttributes }; scopeSpans?: Array<{ spans?: OtlpSpan[] }> }>;
}

async function startOtlpReceiver() {
  const spans: ReceivedSpan[] = [];
  const problems: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces' || !String(req.headers['content-type']).startsWith('application/json')) {
        problems.push(`${req.method} ${req.url} ${req.headers['content-type']}`);
        res.writeHead(404).end();
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as OtlpRequest;
      for (const resourceSpans of body.resourceSpans ?? []) {
        const resource = attributesOf(resourceSpans.resource?.attributes);
        for (const scope of resourceSpans.scopeSpans ?? [])
          for (const span of scope.spans ?? [])
            spans.push({
              service: String(resource['service.name']),
              traceId: hex(span.traceId),
              spanId: hex(span.spanId),
              parentSpanId: span.parentSpanId === undefined || span.parentSpanId === '' ? '' : hex(span.parentSpanId),
              name: span.name,
              attributes: attributesOf(span.attributes),
              eventAttributes: (span.events ?? []).map((e) => attributesOf(e.attributes)),
              links: (span.links ?? []).map((l) => ({ traceId: hex(l.traceId), spanId: hex(l.spanId), attributes: attributesOf(l.attributes) })),
            });
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, problems };
}

function attributesOf(attributes: OtlpAttributes): Record<string, unknown> {
  return Object.fromEntries((attributes ?? []).map(({ key, value }) => [key, valueOf(value)]));
}

function valueOf(value: OtlpValue): unknown {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.arrayValue !== undefined) return value.arrayValue.values.map(valueOf);
  return value; // a key-value list or bytes: as sent, so that nothing inside escapes the checks
}

/** Ids as hex: OTLP/JSON writes them in hex, some encoders in base64. */
function hex(id: string): string {
  return /^[0-9a-f]+$/i.test(id) && (id.length === 32 || id.length === 16) ? id.toLowerCase() : Buffer.from(id, 'base64').toString('hex');
}

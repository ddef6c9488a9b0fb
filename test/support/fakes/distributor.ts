/**
 * A fake UnifiedPush distributor (an RFC 8030 push service such as ntfy) on loopback, with
 * the devices behind it. `register(keys?)` mints an endpoint for a device; a wake posted to
 * it is checked as the device would check it — headers `TTL: 3600`, `Topic: wake`,
 * `Urgency: high|normal`; with keys, `Content-Encoding: aes128gcm` and a record that decrypts
 * with the device's private key (RFC 8291) to the constant wake; without keys, the wake in
 * the clear; with `vapidPublicKey`, a valid RFC 8292 `Authorization: vapid` header.
 *
 * A correct wake is answered 201 (or `acceptStatus`, e.g. ntfy's 200) unless answers were
 * scripted; a wrong one 400, with the reason in `problems`. Unknown endpoints get 404.
 *
 *   const device = createDeviceKeys();
 *   const endpoint = distributor.register(device);
 *   … distributor.received[0].plaintext === '{"v":"1","t":"wake"}'
 */
import { createECDH, randomBytes, type ECDH } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import ece from 'http_ece';
import { decodeProtectedHeader, importJWK, jwtVerify } from 'jose';
import { startServer, type FakeRequest } from './server.js';

/** The wake the app expects, byte for byte (contract §8). */
export const expectedWake = '{"v":"1","t":"wake"}';

export interface DeviceKeys {
  /** Uncompressed P-256 public key (65 bytes): the registration's `p256dh`. */
  readonly p256dh: Buffer;
  /** 16-byte authentication secret: the registration's `auth`. */
  readonly auth: Buffer;
  /** The private half, which only the device holds. */
  readonly privateKey: ECDH;
}

/** A device's RFC 8291 key pair and auth secret, as the Android app generates them. */
export function createDeviceKeys(): DeviceKeys {
  const privateKey = createECDH('prime256v1');
  privateKey.generateKeys();
  return { p256dh: privateKey.getPublicKey(), auth: randomBytes(16), privateKey };
}

export type DistributorAnswer =
  | { readonly status: number; readonly headers?: Readonly<Record<string, string>>; readonly body?: string }
  /** Never answer. */
  | { readonly hang: true };

export interface DistributorMessage {
  readonly at: Date;
  /** The endpoint it was posted to. */
  readonly endpoint: string;
  readonly urgency: string | undefined;
  readonly ttl: string | undefined;
  readonly topic: string | undefined;
  readonly contentEncoding: string | undefined;
  readonly vapid: boolean;
  /** Body bytes as received on the wire. */
  readonly bodyBytes: number;
  /** RFC 8291 header fields of an encrypted message (base64url): salt and the sender's key id. */
  readonly salt: string | undefined;
  readonly senderKey: string | undefined;
  /** The decrypted (or clear) payload, when it could be read. */
  readonly plaintext: string | undefined;
  /** What was wrong with it; empty for a correct wake. */
  readonly problems: readonly string[];
  readonly answered: number | undefined;
}

export interface FakeDistributor {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** Mints an endpoint for a device (with its keys, or none for clear wakes). */
  register(keys?: DeviceKeys): string;
  readonly received: readonly DistributorMessage[];
  /** Every problem of every message, in order. */
  readonly problems: readonly string[];
  /** Answers the next messages with these, in order (checked messages only). */
  script(...answers: DistributorAnswer[]): void;
  /** Called with each message as it is recorded (the live demo shows them). */
  onMessage(listener: (message: DistributorMessage) => void): void;
  close(): Promise<void>;
}

export interface DistributorOptions {
  /** base64url public key the subscription was bound to: VAPID then becomes mandatory. */
  readonly vapidPublicKey?: string;
  /** Status of a successful delivery: 201 per RFC 8030 (ntfy answers 200). */
  readonly acceptStatus?: number;
}

export async function startDistributor(options: DistributorOptions = {}): Promise<FakeDistributor> {
  const devices = new Map<string, DeviceKeys | null>();
  const received: DistributorMessage[] = [];
  const problems: string[] = [];
  const scripted: DistributorAnswer[] = [];
  const listeners: Array<(message: DistributorMessage) => void> = [];
  let origin = '';

  const server = await startServer(async (request, response) => {
    const path = new URL(request.path, origin).pathname;
    if (request.method !== 'POST' || !devices.has(path)) return void response.writeHead(404).end();
    const found = await inspect(request, devices.get(path) ?? null, origin, options.vapidPublicKey);
    const answer: DistributorAnswer = found.problems.length > 0 ? { status: 400 } : (scripted.shift() ?? { status: options.acceptStatus ?? 201 });
    const message: DistributorMessage = { ...found, at: new Date(), endpoint: `${origin}${path}`, answered: 'hang' in answer ? undefined : answer.status };
    received.push(message);
    problems.push(...found.problems);
    for (const listener of listeners) listener(message);
    answerWith(response, answer);
  });
  origin = server.url;

  return {
    url: origin,
    register(keys) {
      const path = `/up/${randomBytes(12).toString('base64url')}`;
      devices.set(path, keys ?? null);
      return `${origin}${path}`;
    },
    received,
    problems,
    script: (...answers) => void scripted.push(...answers),
    onMessage: (listener) => void listeners.push(listener),
    close: server.close,
  };
}

type Inspection = Omit<DistributorMessage, 'at' | 'endpoint' | 'answered'>;

async function inspect(request: FakeRequest, keys: DeviceKeys | null, origin: string, vapidPublicKey: string | undefined): Promise<Inspection> {
  const header = (name: string): string | undefined => {
    const value = request.headers[name];
    return Array.isArray(value) ? value.join(', ') : value;
  };
  const problems: string[] = [];
  const seen = { urgency: header('urgency'), ttl: header('ttl'), topic: header('topic'), contentEncoding: header('content-encoding') };
  if (seen.ttl !== '3600') problems.push(`TTL ${seen.ttl}, expected 3600`);
  if (seen.topic !== 'wake') problems.push(`Topic ${seen.topic}, expected wake`);
  if (seen.urgency !== 'high' && seen.urgency !== 'normal') problems.push(`Urgency ${seen.urgency}, expected high or normal`);
  const plaintext = readPayload(request.body, keys, seen.contentEncoding, problems);
  if (plaintext !== undefined && plaintext !== expectedWake) problems.push(`payload ${JSON.stringify(plaintext)} is not the wake`);
  const authorization = header('authorization');
  if (vapidPublicKey !== undefined) {
    const problem = await checkVapid(authorization, origin, vapidPublicKey);
    if (problem !== undefined) problems.push(problem);
  }
  const encrypted = seen.contentEncoding === 'aes128gcm' && request.body.length >= 86;
  return {
    ...seen,
    vapid: authorization?.startsWith('vapid ') === true,
    bodyBytes: request.body.length,
    salt: encrypted ? request.body.subarray(0, 16).toString('base64url') : undefined,
    senderKey: encrypted ? request.body.subarray(21, 86).toString('base64url') : undefined,
    plaintext,
    problems,
  };
}

function readPayload(body: Buffer, keys: DeviceKeys | null, encoding: string | undefined, problems: string[]): string | undefined {
  if (keys === null) {
    if (encoding !== undefined) problems.push(`Content-Encoding ${encoding} for a device without keys`);
    return body.toString('utf8');
  }
  if (encoding !== 'aes128gcm') {
    problems.push(`Content-Encoding ${encoding}, expected aes128gcm`);
    return undefined;
  }
  // RFC 8291 §4: keyid is the sender's 65-byte public key.
  if (body.length < 21 || body[20] !== 65) problems.push('keyid is not a 65-byte public key');
  try {
    return ece.decrypt(body, { version: 'aes128gcm', privateKey: keys.privateKey, authSecret: keys.auth }).toString('utf8');
  } catch (error) {
    problems.push(`does not decrypt with the device key: ${error instanceof Error ? error.message : String(error)}`);
    return undefined;
  }
}

/** RFC 8292 §2–3: `vapid t=<ES256 JWT for our origin, exp ≤ 24 h>, k=<the bound public key>`. */
async function checkVapid(authorization: string | undefined, origin: string, expectedKey: string): Promise<string | undefined> {
  const match = /^vapid t=([^,\s]+),\s*k=([A-Za-z0-9_-]+)$/.exec(authorization ?? '');
  if (match === null) return `Authorization ${authorization === undefined ? 'missing' : 'is not "vapid t=…, k=…"'}`;
  const [, token = '', key = ''] = match;
  if (key !== expectedKey) return 'VAPID k is not the key the subscription was bound to';
  try {
    if (decodeProtectedHeader(token).typ !== 'JWT') return 'VAPID JWT header lacks typ JWT';
    const point = Buffer.from(key, 'base64url');
    const publicKey = await importJWK(
      { kty: 'EC', crv: 'P-256', x: point.subarray(1, 33).toString('base64url'), y: point.subarray(33, 65).toString('base64url') },
      'ES256',
    );
    const { payload } = await jwtVerify(token, publicKey, { algorithms: ['ES256'], audience: origin, requiredClaims: ['exp', 'sub'] });
    if ((payload.exp ?? 0) > Date.now() / 1000 + 24 * 3600) return 'VAPID exp more than 24 hours ahead';
    if (!/^(mailto:|https:)/.test(String(payload.sub))) return 'VAPID sub is not a mailto: or https: URL';
  } catch (error) {
    return `VAPID JWT rejected: ${error instanceof Error ? error.message : String(error)}`;
  }
  return undefined;
}

function answerWith(response: ServerResponse, answer: DistributorAnswer): void {
  if ('hang' in answer) return;
  response.writeHead(answer.status, { ...answer.headers }).end(answer.body ?? '');
}

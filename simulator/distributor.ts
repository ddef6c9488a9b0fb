/**
 * A local UnifiedPush distributor (an RFC 8030 push service such as ntfy) with the devices
 * behind it. `register(keys?)` mints an endpoint for a device; a wake posted to it is checked
 * as the device would check it — headers `TTL: 3600`, `Topic: wake`, `Urgency: high|normal`;
 * with keys, `Content-Encoding: aes128gcm` and a record that decrypts with the device's
 * private key (RFC 8291) to the constant wake; without keys, the wake in the clear; with
 * `vapidPublicKey`, a valid RFC 8292 `Authorization: vapid` header.
 *
 * The device simulator and the live demo receive their wakes here; the test suite uses it as
 * its fake distributor. A correct wake is answered 201 (or `acceptStatus`, e.g. ntfy's 200)
 * unless answers were scripted; a wrong one 400, with the reason in `problems`. Unknown
 * endpoints get 404, which the instance treats as a dead endpoint.
 *
 *   const device = createDeviceKeys();
 *   const endpoint = distributor.register(device);
 *   … distributor.received[0].plaintext === '{"v":"1","t":"wake"}'
 */
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { wakePayload } from '../src/transports/types.js';
import { decryptForDevice, type DeviceKeys } from './device-keys.js';
import { startServer, type FakeRequest } from './loopback-server.js';
import { vapidProblem } from './vapid-check.js';

export { createDeviceKeys, type DeviceKeys } from './device-keys.js';

/** The wake the app expects, byte for byte (docs/design.md, Wakes on the wire). */
export const expectedWake = wakePayload;

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
  /** Where the distributor listens, e.g. `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** Mints an endpoint for a device (with its keys, or none for clear wakes). */
  register(keys?: DeviceKeys): string;
  /** Forgets an endpoint: later posts to it are answered 404 (the app uninstalled). */
  unregister(endpoint: string): void;
  readonly received: readonly DistributorMessage[];
  /** Every problem of every message, in order. */
  readonly problems: readonly string[];
  /** Answers the next messages with these, in order (checked messages only). */
  script(...answers: DistributorAnswer[]): void;
  /** Answers every checked message with this (after the scripted ones) until called with undefined: the server is down. */
  answerAll(answer: DistributorAnswer | undefined): void;
  /** Answers every checked message to this endpoint with this (before anything else) until called with undefined. */
  answerFor(endpoint: string, answer: DistributorAnswer | undefined): void;
  /** Called with each message as it is recorded. */
  onMessage(listener: (message: DistributorMessage) => void): void;
  close(): Promise<void>;
}

/** The same thing under the name the product uses. */
export type LocalDistributor = FakeDistributor;

export interface DistributorOptions {
  /** base64url public key the subscription was bound to: VAPID then becomes mandatory. */
  readonly vapidPublicKey?: string;
  /** Status of a successful delivery: 201 per RFC 8030 (ntfy answers 200). */
  readonly acceptStatus?: number;
  /** Listen address; loopback and an ephemeral port by default. */
  readonly host?: string;
  readonly port?: number;
  /** The origin endpoints are minted under, when the instance reaches us through a proxy or tunnel. */
  readonly publicUrl?: string;
}

export async function startDistributor(options: DistributorOptions = {}): Promise<FakeDistributor> {
  const devices = new Map<string, DeviceKeys | null>();
  const received: DistributorMessage[] = [];
  const problems: string[] = [];
  const scripted: DistributorAnswer[] = [];
  const perEndpoint = new Map<string, DistributorAnswer>();
  let always: DistributorAnswer | undefined;
  const listeners: Array<(message: DistributorMessage) => void> = [];
  let origin = '';

  const server = await startServer(
    async (request, response) => {
      const path = new URL(request.path, origin).pathname;
      if (request.method !== 'POST' || !devices.has(path)) return void response.writeHead(404).end();
      const found = await inspect(request, devices.get(path) ?? null, origin, options.vapidPublicKey);
      const answer: DistributorAnswer =
        found.problems.length > 0
          ? { status: 400 }
          : (perEndpoint.get(path) ?? scripted.shift() ?? always ?? { status: options.acceptStatus ?? 201 });
      const message: DistributorMessage = {
        ...found,
        at: new Date(),
        endpoint: `${origin}${path}`,
        answered: 'hang' in answer ? undefined : answer.status,
      };
      received.push(message);
      problems.push(...found.problems);
      for (const listener of listeners) listener(message);
      answerWith(response, answer);
    },
    options.host,
    options.port,
  );
  origin = (options.publicUrl ?? server.url).replace(/\/+$/, '');
  const pathOf = (endpoint: string) => endpoint.slice(origin.length);

  return {
    url: server.url,
    register(keys) {
      const path = `/up/${randomBytes(12).toString('base64url')}`;
      devices.set(path, keys ?? null);
      return `${origin}${path}`;
    },
    unregister: (endpoint) => void devices.delete(pathOf(endpoint)),
    received,
    problems,
    script: (...answers) => void scripted.push(...answers),
    answerAll: (answer) => void (always = answer),
    answerFor: (endpoint, answer) => void (answer === undefined ? perEndpoint.delete(pathOf(endpoint)) : perEndpoint.set(pathOf(endpoint), answer)),
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
    const problem = await vapidProblem(authorization, new URL(origin).origin, vapidPublicKey);
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
    return decryptForDevice(body, keys);
  } catch (error) {
    problems.push(`does not decrypt with the device key: ${error instanceof Error ? error.message : String(error)}`);
    return undefined;
  }
}

function answerWith(response: ServerResponse, answer: DistributorAnswer): void {
  if ('hang' in answer) return;
  response.writeHead(answer.status, { ...answer.headers }).end(answer.body ?? '');
}

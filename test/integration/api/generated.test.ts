/**
 * The generated-request tier: requests made from docs/openapi.yaml itself — its
 * schemas, parameters, media types and links — sent to the running api (real PostgreSQL, real
 * JWTs, real Temporal), as a client generated from the document would. For each request the
 * document's own validator says whether it is valid, and then:
 *
 * - a valid request is accepted, unless it breaks a rule the operation lists under
 *   `x-checked-at-run-time` (on this instance, with this test's DNS), and then it gets exactly
 *   that rule's documented status, error and message;
 * - an invalid request gets a 4xx with the documented error shape;
 * - nothing gets a 5xx, and every response matches the document (status, headers, body);
 * - after a registration, the `links` of its 200 are followed (GET, DELETE, drain, test wake)
 *   and agree with what was stored; after a refusal, nothing was stored.
 *
 * Bounded (API_GENERATED_RUNS, default below); fast-check prints the seed and path of a
 * failure: replay it with API_GENERATED_SEED=<seed> (and API_GENERATED_PATH=<path>).
 */
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'slonik';
import type { LookupHost } from '../../../src/api/unifiedpush-endpoint.js';
import { startTestApi, type TestApi, type TestResponse } from '../../support/api.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { signDeviceToken, testJwtSecret } from '../../support/jwt.js';
import { operationById, pointerOf } from '../../support/openapi-document.js';
import { answersOneOf, brokenRules, type Instance } from '../../support/run-time-rules.js';
import { classify, valuesOf } from '../../support/schema-arbitrary.js';
import { createUser, nextId, signIn } from './host.js';
import { assertDocumented } from './openapi.js';
import { terminateAll } from './temporal.js';

const runs = Number(process.env['API_GENERATED_RUNS'] ?? 800);
const seed = process.env['API_GENERATED_SEED'] === undefined ? undefined : Number(process.env['API_GENERATED_SEED']);
const path = process.env['API_GENERATED_PATH'];
const taskQueue = `api-generated-${nextId()}`;

/**
 * This test's DNS: what a name resolves to follows from its text, so the oracle (run-time-rules)
 * knows it too. Most names are public; some private, some mixed, some do not resolve.
 */
function resolveName(hostname: string): readonly string[] | undefined {
  const bucket = createHash('sha256').update(hostname).digest()[0]! % 10;
  if (bucket < 6) return ['93.184.215.14', '2606:4700::1111'];
  if (bucket < 7) return ['10.0.0.7'];
  if (bucket < 8) return ['93.184.215.14', '127.0.0.1'];
  if (bucket < 9) return [];
  return undefined;
}
const lookupHost: LookupHost = async (hostname) => {
  const addresses = resolveName(hostname);
  if (addresses === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
  return addresses;
};

interface Deployment {
  readonly name: string;
  readonly env: Record<string, string>;
  readonly instance: Instance;
  api?: TestApi;
}
const deployments: Deployment[] = [
  { name: 'production', env: {}, instance: { fcmEnabled: false, allowHttp: false, allowPrivate: false, resolve: resolveName } },
  {
    name: 'production with FCM',
    env: { FCM_PROJECT_ID: 'zippchat-generated' },
    instance: { fcmEnabled: true, allowHttp: false, allowPrivate: false, resolve: resolveName },
  },
  {
    name: 'development',
    env: { FCM_PROJECT_ID: 'zippchat-generated', PUSH_UP_ALLOW_HTTP: 'true', PUSH_UP_ALLOW_PRIVATE: 'true' },
    instance: { fcmEnabled: true, allowHttp: true, allowPrivate: true, resolve: resolveName },
  },
];

let db: TestDatabase;
let user: string;

beforeAll(async () => {
  db = await freshDatabase();
  const rateLimit = { perSecond: 1e9, burst: 1e9 }; // the limit would answer 429 before the rules under test
  for (const deployment of deployments) deployment.api = await startTestApi({ db, taskQueue, lookupHost, rateLimit, env: deployment.env });
  user = await createUser(db.pool);
});

afterAll(async () => {
  if (deployments[0]?.api !== undefined) await terminateAll(deployments[0].api.temporal.client, taskQueue);
  for (const deployment of deployments) await deployment.api?.close();
  await db?.drop();
});

// ---- what the document offers ---------------------------------------------------------------

const put = operationById('putRegistration');
const putPointer = pointerOf('paths', put.template, 'put');
const bodyMediaTypes = Object.keys(put.operation.requestBody!.content);
const headerParameters = (put.operation.parameters ?? []).map((parameter, index) => ({
  name: String(parameter['name']),
  in: String(parameter['in']),
  required: parameter['required'] === true,
  pointer: `${putPointer}/parameters/${index}/schema`,
}));
const links = Object.values((put.operation.responses['200']!['links'] ?? {}) as Record<string, { operationId: string }>).map(
  (link) => link.operationId,
);

const revoke = operationById('revokeDevice');
const deviceIdPointer = `${pointerOf('paths', revoke.template, 'delete', 'parameters')}/${(revoke.operation.parameters ?? []).findIndex((p) => p['name'] === 'device_id')}/schema`;

const config = operationById('getPushConfig');

const drainOperation = operationById('drain');
const drainBodyPointer = `${pointerOf('paths', drainOperation.template, 'post')}/requestBody/content/application~1json/schema`;
const drainTooLarge = (drainOperation.operation['x-checked-at-run-time'] ?? []).find((rule) => rule.id === 'body-too-large')!;

// ---- generators ----------------------------------------------------------------------------

/** HTTP carries header values as visible ASCII with inner spaces; what is around them is not part of the value. */
const sendableHeaderValue = (value: unknown): value is string =>
  typeof value === 'string' && /^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$|^$/.test(value);
/**
 * What a path can carry of a generated value: text (a number or an array goes as its JSON
 * text), well-formed (a lone surrogate has no UTF-8, so no percent-encoding).
 */
const pathText = (value: unknown): string => (typeof value === 'string' ? value : JSON.stringify(value)).replace(/[\ud800-\udfff]/gu, '\ufffd');

const headerValues = fc.tuple(
  ...headerParameters.map((parameter) =>
    fc.oneof(
      { arbitrary: fc.constant(null), weight: 3 },
      { arbitrary: valuesOf(parameter.pointer).filter(({ value }) => sendableHeaderValue(value)), weight: 1 },
    ),
  ),
);

const mediaType = fc.oneof(
  { arbitrary: fc.constantFrom(...bodyMediaTypes).map((type) => ({ type, documented: true })), weight: 8 },
  { arbitrary: fc.constantFrom(...bodyMediaTypes.map((type) => `${type}; charset=utf-8`)).map((type) => ({ type, documented: true })), weight: 1 },
  {
    arbitrary: fc
      .constantFrom(
        undefined,
        'text/plain',
        'application/x-www-form-urlencoded',
        'application/merge-patch+json',
        'application/json; charset=iso-8859-1',
      )
      .map((type) => ({ type, documented: false })),
    weight: 1,
  },
);

const registration = fc.record({
  kind: fc.constant('register' as const),
  deployment: fc.nat({ max: deployments.length - 1 }),
  body: valuesOf(`${putPointer}/requestBody/content/application~1json/schema`),
  headers: headerValues,
  mediaType,
  linkOrder: fc.shuffledSubarray(links, { minLength: links.length, maxLength: links.length }),
});

const revocation = fc.record({
  kind: fc.constant('revoke' as const),
  deployment: fc.nat({ max: deployments.length - 1 }),
  deviceId: valuesOf(deviceIdPointer).map(({ value }) => {
    const id = pathText(value);
    return { value: id, verdict: classify(deviceIdPointer, id) };
  }),
  exists: fc.boolean(),
});

const configRead = fc.record({ kind: fc.constant('config' as const), deployment: fc.nat({ max: deployments.length - 1 }) });

const drainCase = fc.record({
  kind: fc.constant('drain' as const),
  deployment: fc.nat({ max: deployments.length - 1 }),
  /** null: no body at all. */
  body: fc.option(valuesOf(drainBodyPointer), { freq: 4 }),
  headers: headerValues,
  mediaType,
});

const generatedCase = fc.oneof(
  { arbitrary: registration, weight: 6 },
  { arbitrary: revocation, weight: 3 },
  { arbitrary: drainCase, weight: 2 },
  { arbitrary: configRead, weight: 1 },
);
type Case = typeof generatedCase extends fc.Arbitrary<infer T> ? T : never;

// ---- the checks ----------------------------------------------------------------------------

let devices = 0;
const seen = new Map<string, number>();
const count = (what: string) => seen.set(what, (seen.get(what) ?? 0) + 1);

async function send(api: TestApi, method: string, requestPath: string, options: Parameters<TestApi['request']>[2]): Promise<TestResponse> {
  const response = await api.request(method, requestPath, options);
  const where = `${method} ${requestPath} → ${response.status} ${response.text.slice(0, 300)}`;
  expect(response.status, where).toBeLessThan(500);
  assertDocumented(method, requestPath, response);
  return response;
}

function expectRefusal(response: TestResponse, what: string): void {
  expect(response.status, `${what}: ${response.text}`).toBeGreaterThanOrEqual(400);
  expect(response.status, `${what}: ${response.text}`).toBeLessThan(500);
  expect(response.json, what).toEqual({ error: expect.any(String), message: expect.any(String) });
}

async function register(generated: Extract<Case, { kind: 'register' }>): Promise<void> {
  const deployment = deployments[generated.deployment]!;
  const api = deployment.api!;
  const device = `generated-${++devices}`;
  const token = await signDeviceToken({ userId: user, deviceId: device, secret: testJwtSecret });
  await signIn(db.pool, user, device);
  const text = JSON.stringify(generated.body.value);
  const { headers, valid: headersValid } = sentHeaders(generated);
  if (generated.mediaType.type !== undefined) headers['content-type'] = generated.mediaType.type;
  const valid = generated.body.verdict === 'valid' && headersValid && generated.mediaType.documented;
  const response = await send(api, 'PUT', put.template, { token, headers, body: text });
  const what = `PUT ${text.slice(0, 300)} with ${JSON.stringify(headers)} on ${deployment.name}`;

  let stored: unknown;
  if (!valid) {
    count('invalid: refused');
    expectRefusal(response, `the document forbids ${what}`);
  } else {
    const broken = brokenRules(generated.body.value as Record<string, unknown>, Buffer.byteLength(text), deployment.instance);
    if (broken.length > 0) {
      count(`valid: refused at run time (${broken.join(', ')})`);
      expect(
        answersOneOf(broken, response.status, response.json),
        `${what} breaks ${broken.join(', ')} but got ${response.status} ${response.text}`,
      ).toBe(true);
    } else {
      count('valid: accepted');
      expect(response.status, `the document allows ${what}: ${response.text}`).toBe(200);
      stored = response.json;
    }
  }
  await followLinks(api, token, stored, stored === undefined ? [] : generated.linkOrder);
}

/** The 200's links, in the generated order, against a model of the device: registered as `stored`, or not. */
async function followLinks(api: TestApi, token: string, stored: unknown, order: readonly string[]): Promise<void> {
  let registered = stored;
  for (const operationId of [...order, 'getRegistration']) {
    const { method, template } = operationById(operationId);
    const response = await send(api, method, template, { token });
    if (operationId === 'deleteRegistration') {
      expect(response.status).toBe(204);
      registered = undefined;
    } else if (registered === undefined) {
      expect(response.status, `${operationId} without a registration`).toBe(404);
    } else if (operationId === 'getRegistration') {
      expect(response.status).toBe(200);
      expect(response.json).toEqual(registered);
    } else if (operationId === 'testWake') {
      expect(response.status, response.text).toBe(202);
      registered = response.json;
    } else if (operationId === 'drain') {
      expect(response.status).toBe(200);
      expect(response.json).toEqual([]);
      registered = { ...(registered as Record<string, unknown>), last_drained_at: expect.any(String) };
    } else {
      throw new Error(`no expectation for the link to ${operationId}`);
    }
  }
}

async function revokeDevice(generated: Extract<Case, { kind: 'revoke' }>): Promise<void> {
  const api = deployments[generated.deployment]!.api!;
  const caller = `caller-${++devices}`;
  const token = await signDeviceToken({ userId: user, deviceId: caller, secret: testJwtSecret });
  const deviceId = generated.deviceId.value;
  const requestPath = revoke.template.replace('{device_id}', encodeURIComponent(deviceId));
  const what = `DELETE ${requestPath}`;
  if (generated.deviceId.verdict === 'invalid') {
    count('invalid: refused');
    expectRefusal(await send(api, 'DELETE', requestPath, { token }), `the document forbids ${what}`);
    return;
  }
  if (generated.exists) {
    await db.pool.query(sql.unsafe`
      INSERT INTO device_keys (user_id, device_id, identity_key) VALUES (${user}, ${deviceId}, '\\x01') ON CONFLICT DO NOTHING
    `);
  }
  const response = await send(api, 'DELETE', requestPath, { token });
  count(`valid: revoke ${generated.exists ? 'known' : 'unknown'}`);
  expect(response.status, `${what}: ${response.text}`).toBe(generated.exists ? 204 : 404);
  const left = await db.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM device_keys WHERE user_id = ${user} AND device_id = ${deviceId}`);
  expect(left, what).toBe(0);
}

/** The document's headers of an operation, as generated: the headers to send, and whether they are valid. */
function sentHeaders(generated: { readonly headers: ReadonlyArray<{ value: unknown; verdict: string } | null> }): {
  headers: Record<string, string>;
  valid: boolean;
} {
  const headers: Record<string, string> = {};
  let valid = true;
  headerParameters.forEach((parameter, index) => {
    const value = generated.headers[index];
    if (value === null || value === undefined) {
      if (parameter.required) valid = false;
      return;
    }
    headers[parameter.name.toLowerCase()] = value.value as string;
    if (value.verdict === 'invalid') valid = false;
  });
  return { headers, valid };
}

/**
 * A drain, with or without a generated body: valid ones drain (an empty list: nothing is ever
 * pending here), invalid ones get a 4xx and drain nothing (the drain's time stays unset).
 */
async function drainWith(generated: Extract<Case, { kind: 'drain' }>): Promise<void> {
  const api = deployments[generated.deployment]!.api!;
  const device = `drainer-${++devices}`;
  await db.pool.query(sql.unsafe`
    INSERT INTO push_registrations (user_id, device_id, transport, token) VALUES (${user}, ${device}, 'unifiedpush', ${`https://up.example/${device}`})`);
  const token = await signDeviceToken({ userId: user, deviceId: device, secret: testJwtSecret });
  const { template } = drainOperation;
  const drained = () =>
    db.pool.oneFirst(sql.unsafe`SELECT last_drained_at IS NOT NULL FROM push_registrations WHERE user_id = ${user} AND device_id = ${device}`);
  if (generated.body === null) {
    count('valid: drain without a body');
    const response = await send(api, 'POST', template, { token });
    expect(response.status, response.text).toBe(200);
    expect(await drained()).toBe(true);
    return;
  }
  const text = JSON.stringify(generated.body.value);
  const { headers, valid: headersValid } = sentHeaders(generated);
  if (generated.mediaType.type !== undefined) headers['content-type'] = generated.mediaType.type;
  const valid = generated.body.verdict === 'valid' && headersValid && generated.mediaType.documented;
  const response = await send(api, 'POST', template, { token, headers, body: text });
  const what = `POST ${template} ${text.slice(0, 300)} with ${JSON.stringify(headers)}`;
  if (!valid) {
    count('invalid: drain refused');
    expectRefusal(response, `the document forbids ${what}`);
    expect(await drained(), what).toBe(false);
  } else if (Buffer.byteLength(text) > 4096) {
    count('valid: drain refused at run time (body-too-large)');
    expect(response.status, what).toBe(drainTooLarge.status);
    expect(response.json, what).toMatchObject({
      error: drainTooLarge.error,
      message: expect.stringMatching(new RegExp(`^${drainTooLarge.message}`)),
    });
  } else {
    count('valid: drain with a body');
    expect(response.status, `the document allows ${what}: ${response.text}`).toBe(200);
    expect(response.json).toEqual([]);
  }
}

async function readConfig(generated: Extract<Case, { kind: 'config' }>): Promise<void> {
  const deployment = deployments[generated.deployment]!;
  const token = await signDeviceToken({ userId: user, deviceId: `reader-${++devices}`, secret: testJwtSecret });
  const response = await send(deployment.api!, config.method, config.template, { token });
  count('valid: config');
  expect(response.status).toBe(200);
  expect((response.json as { fcm: boolean }).fcm).toBe(deployment.instance.fcmEnabled);
}

describe('requests generated from docs/openapi.yaml', () => {
  it(`${runs} cases: valid ones accepted (or refused by a documented run-time rule), invalid ones 4xx, none 5xx, every response as documented`, async () => {
    await fc.assert(
      fc.asyncProperty(generatedCase, async (generated) => {
        if (generated.kind === 'register') await register(generated);
        else if (generated.kind === 'revoke') await revokeDevice(generated);
        else if (generated.kind === 'drain') await drainWith(generated);
        else await readConfig(generated);
      }),
      { numRuns: runs, ...(seed === undefined ? {} : { seed }), ...(path === undefined ? {} : { path }), endOnFailure: true },
    );
    // The generators reach every side, not one (seen on failure: the counts).
    const summary = JSON.stringify(Object.fromEntries([...seen].sort()), null, 1);
    const needed = [
      'valid: accepted',
      'invalid: refused',
      'valid: revoke known',
      'valid: revoke unknown',
      'valid: drain without a body',
      'valid: drain with a body',
      'invalid: drain refused',
    ];
    for (const what of needed) {
      expect(seen.get(what) ?? 0, `${what} never happened:\n${summary}`).toBeGreaterThan(0);
    }
    expect(
      [...seen.keys()].some((key) => key.startsWith('valid: refused at run time')),
      summary,
    ).toBe(true);
  }, 600_000);
});

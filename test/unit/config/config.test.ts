import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, type Role } from '../../../src/config/index.js';

const base = {
  DATABASE_URL: 'postgres://push@db.internal:5432/zippchat',
  JWT_SECRET: 'a-development-secret-of-at-least-32-bytes',
};

function serviceAccount(overrides: Record<string, unknown> = {}): string {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return JSON.stringify({
    type: 'service_account',
    project_id: 'zippchat-test',
    client_email: 'push@zippchat-test.iam.gserviceaccount.com',
    private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }),
    token_uri: 'http://127.0.0.1:9/token',
    ...overrides,
  });
}

function failure(env: Record<string, string>, role: Role = 'api'): ConfigError {
  try {
    loadConfig(role, env);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    const config = loadConfig('api', base);
    expect(config.temporal).toEqual({ address: '127.0.0.1:7233', namespace: 'default', taskQueue: 'push-wakes' });
    expect(config.http).toEqual({ host: '127.0.0.1', port: 8080 });
    expect(config.fcm).toEqual({ projectId: undefined });
    expect(config.unifiedPush).toEqual({ allowPrivate: false, allowHttp: false, vapid: undefined });
    expect(config.jwt.key).toMatchObject({ kind: 'secret', algorithm: 'HS256' });
    expect(config.jwt.issuer).toBeUndefined();
    const worker = loadConfig('worker', base);
    expect(worker.fcm).toEqual({ projectId: undefined, credentials: undefined, endpoint: 'https://fcm.googleapis.com' });
    expect(worker.wakePolicy).toEqual({ minIntervalMs: 15_000, rewakeAfterMs: 900_000, fcmBudget: { burst: 20, refillMs: 180_000, dmReserve: 5 } });
    expect(loadConfig('bridge', base).nats).toEqual({ servers: ['nats://127.0.0.1:4222'], auth: { kind: 'none' } });
  });

  it('reads every variable it is given', () => {
    const env = {
      ...base,
      NATS_URL: 'nats://a:4222, nats://b:4222',
      TEMPORAL_ADDRESS: 'temporal.internal:7233',
      TEMPORAL_NAMESPACE: 'zippchat',
      TEMPORAL_TASK_QUEUE: 'wakes-2',
      PORT: '9000',
      HOST: '0.0.0.0',
      JWT_ISSUER: 'https://chat.example',
      JWT_AUDIENCE: 'zippchat',
      FCM_PROJECT_ID: 'zippchat-test',
      FCM_CREDENTIALS_JSON: serviceAccount(),
      FCM_ENDPOINT: 'http://127.0.0.1:9999/',
      PUSH_UP_ALLOW_PRIVATE: 'true',
      PUSH_UP_ALLOW_HTTP: '1',
      PUSH_MIN_INTERVAL_MS: '1000',
      PUSH_REWAKE_AFTER_MS: '60000',
      PUSH_FCM_WAKE_BURST: '10',
      PUSH_FCM_WAKE_REFILL_MS: '60000',
      PUSH_FCM_DM_RESERVE: '3',
    };
    const config = loadConfig('worker', env);
    expect(loadConfig('bridge', env).nats.servers).toEqual(['nats://a:4222', 'nats://b:4222']);
    expect(config.temporal).toEqual({ address: 'temporal.internal:7233', namespace: 'zippchat', taskQueue: 'wakes-2' });
    expect(loadConfig('api', env).http).toEqual({ host: '0.0.0.0', port: 9000 });
    expect(loadConfig('api', env).jwt).toMatchObject({ issuer: 'https://chat.example', audience: 'zippchat' });
    expect(config.fcm.projectId).toBe('zippchat-test');
    expect(config.wakePolicy.fcmBudget).toEqual({ burst: 10, refillMs: 60_000, dmReserve: 3 });
    expect(config.fcm.credentials).toMatchObject({ kind: 'key', key: { tokenUri: 'http://127.0.0.1:9/token' } });
    expect(config.fcm.endpoint).toBe('http://127.0.0.1:9999');
    expect(config.unifiedPush).toMatchObject({ allowPrivate: true, allowHttp: true });
    expect(config.wakePolicy).toMatchObject({ minIntervalMs: 1000, rewakeAfterMs: 60_000 });
  });

  it('pins the JWT algorithm by the type of JWT_PUBLIC_KEY', () => {
    const pem = (type: 'rsa' | 'ec' | 'ed25519') => {
      const pair =
        type === 'rsa'
          ? generateKeyPairSync('rsa', { modulusLength: 2048 })
          : type === 'ec'
            ? generateKeyPairSync('ec', { namedCurve: 'P-256' })
            : generateKeyPairSync('ed25519');
      return pair.publicKey.export({ type: 'spki', format: 'pem' }).toString();
    };
    const env = (key: string) => ({ DATABASE_URL: base.DATABASE_URL, JWT_PUBLIC_KEY: key });
    expect(loadConfig('api', env(pem('rsa'))).jwt.key?.algorithm).toBe('RS256');
    expect(loadConfig('api', env(pem('ec'))).jwt.key?.algorithm).toBe('ES256');
    expect(loadConfig('api', env(pem('ed25519'))).jwt.key?.algorithm).toBe('EdDSA');
  });

  it('derives the VAPID public key from the private key', () => {
    const config = loadConfig('api', {
      ...base,
      // RFC 8292 example-style raw P-256 scalar (any valid 32-byte scalar works).
      PUSH_VAPID_PRIVATE_KEY: Buffer.alloc(32, 7).toString('base64url'),
      PUSH_VAPID_SUBJECT: 'mailto:ops@chat.example',
    });
    expect(Buffer.from(config.unifiedPush.vapid!.publicKey, 'base64url')).toHaveLength(65);
  });

  const rejected: Array<[string, Record<string, string>, Role?]> = [
    ['DATABASE_URL', { DATABASE_URL: '' }],
    ['DATABASE_URL', { DATABASE_URL: 'mysql://x/y' }],
    ['NATS_URL', { NATS_URL: 'http://nats:4222' }, 'bridge'],
    ['NATS_URL', { NATS_URL: 'nats://a:4222,,garbage' }, 'bridge'],
    ['TEMPORAL_ADDRESS', { TEMPORAL_ADDRESS: 'temporal' }],
    ['TEMPORAL_ADDRESS', { TEMPORAL_ADDRESS: 'temporal:99999' }],
    ['TEMPORAL_NAMESPACE', { TEMPORAL_NAMESPACE: 'has space' }],
    ['TEMPORAL_TASK_QUEUE', { TEMPORAL_TASK_QUEUE: 'a/b' }],
    ['PORT', { PORT: 'eighty' }],
    ['PORT', { PORT: '70000' }],
    ['HOST', { HOST: 'bad host' }],
    ['JWT_SECRET', { JWT_SECRET: '' }],
    ['JWT_SECRET', { JWT_SECRET: 'short' }],
    ['JWT_PUBLIC_KEY', { JWT_PUBLIC_KEY: 'not a pem' }],
    ['JWT_PUBLIC_KEY', { JWT_PUBLIC_KEY: '-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----' }],
    ['FCM_PROJECT_ID', { FCM_PROJECT_ID: 'bad project!' }],
    ['FCM_CREDENTIALS_JSON', { FCM_CREDENTIALS_JSON: '{not json' }, 'worker'],
    ['FCM_CREDENTIALS_JSON', { FCM_CREDENTIALS_JSON: '{"client_email":"x"}' }, 'worker'],
    ['FCM_CREDENTIALS_JSON', { FCM_CREDENTIALS_JSON: '{"client_email":"x","private_key":"nope"}' }, 'worker'],
    ['FCM_ENDPOINT', { FCM_ENDPOINT: 'ftp://fcm' }, 'worker'],
    ['PUSH_UP_ALLOW_PRIVATE', { PUSH_UP_ALLOW_PRIVATE: 'maybe' }],
    ['PUSH_UP_ALLOW_HTTP', { PUSH_UP_ALLOW_HTTP: '2' }],
    ['PUSH_VAPID_PRIVATE_KEY', { PUSH_VAPID_SUBJECT: 'mailto:a@b.example' }],
    ['PUSH_VAPID_SUBJECT', { PUSH_VAPID_PRIVATE_KEY: Buffer.alloc(32, 7).toString('base64url') }],
    ['PUSH_VAPID_PRIVATE_KEY', { PUSH_VAPID_PRIVATE_KEY: 'dG9vIHNob3J0', PUSH_VAPID_SUBJECT: 'mailto:a@b.example' }],
    ['PUSH_VAPID_PRIVATE_KEY', { PUSH_VAPID_PRIVATE_KEY: Buffer.alloc(32, 0).toString('base64url'), PUSH_VAPID_SUBJECT: 'mailto:a@b.example' }],
    ['PUSH_VAPID_SUBJECT', { PUSH_VAPID_PRIVATE_KEY: Buffer.alloc(32, 7).toString('base64url'), PUSH_VAPID_SUBJECT: 'ops@chat' }],
    ['PUSH_MIN_INTERVAL_MS', { PUSH_MIN_INTERVAL_MS: '-5' }, 'worker'],
    ['PUSH_MIN_INTERVAL_MS', { PUSH_MIN_INTERVAL_MS: '1.5' }, 'worker'],
    ['PUSH_REWAKE_AFTER_MS', { PUSH_REWAKE_AFTER_MS: 'soon' }, 'worker'],
    ['PUSH_REWAKE_AFTER_MS', { PUSH_MIN_INTERVAL_MS: '20000', PUSH_REWAKE_AFTER_MS: '10000' }, 'worker'],
    ['PUSH_FCM_WAKE_BURST', { PUSH_FCM_WAKE_BURST: '-1' }, 'worker'],
    ['PUSH_FCM_WAKE_BURST', { PUSH_FCM_WAKE_BURST: 'many' }, 'worker'],
    ['PUSH_FCM_WAKE_REFILL_MS', { PUSH_FCM_WAKE_REFILL_MS: '0' }, 'worker'],
    ['PUSH_FCM_DM_RESERVE', { PUSH_FCM_DM_RESERVE: '1.5' }, 'worker'],
    ['PUSH_FCM_DM_RESERVE', { PUSH_FCM_WAKE_BURST: '5', PUSH_FCM_DM_RESERVE: '5' }, 'worker'],
    ['LOG_LEVEL', { LOG_LEVEL: 'loud' }],
  ];

  it.each(rejected)('rejects a bad %s with one line naming it', (variable, overrides, role) => {
    const error = failure({ ...base, ...overrides }, role);
    expect(error.variable).toBe(variable);
    expect(error.message).toMatch(new RegExp(`^config: ${variable} `));
    expect(error.message).not.toContain('\n');
  });

  it('requires a JWT key on the api but not on the worker or the bridge', () => {
    const { JWT_SECRET: _, ...withoutKey } = base;
    expect(failure(withoutKey, 'api').variable).toBe('JWT_SECRET');
    expect(() => loadConfig('worker', withoutKey)).not.toThrow();
    expect(() => loadConfig('bridge', withoutKey)).not.toThrow();
  });

  it('refuses both JWT keys at once, and never echoes a secret', () => {
    const { publicKey } = generateKeyPairSync('ed25519');
    const error = failure({ ...base, JWT_PUBLIC_KEY: publicKey.export({ type: 'spki', format: 'pem' }).toString() });
    expect(error.variable).toBe('JWT_PUBLIC_KEY');
    expect(failure({ ...base, JWT_SECRET: 'tiny-secret' }).message).not.toContain('tiny-secret');
    const credentials = '{"client_email":"x","private_key":"SECRET-PEM"}';
    expect(failure({ ...base, FCM_PROJECT_ID: 'p', FCM_CREDENTIALS_JSON: credentials }, 'worker').message).not.toContain('SECRET-PEM');
  });

  it('refuses FCM configured by halves on the worker, and offers FCM on the api only for FCM_PROJECT_ID', () => {
    const worker = (env: Record<string, string>) => failure({ ...base, ...env }, 'worker');
    expect(worker({ FCM_PROJECT_ID: 'zippchat-test' }).message).toBe(
      'config: FCM_PROJECT_ID needs a credential source on the worker: set FCM_CREDENTIALS_JSON (or FCM_CREDENTIALS_JSON_FILE) or FCM_USE_ADC=true',
    );
    expect(worker({ FCM_CREDENTIALS_JSON: serviceAccount() }).variable).toBe('FCM_PROJECT_ID');
    const otherProject = worker({ FCM_PROJECT_ID: 'zippchat-prod', FCM_CREDENTIALS_JSON: serviceAccount() });
    expect(otherProject.message).toBe('config: FCM_CREDENTIALS_JSON is a key of project "zippchat-test", not of FCM_PROJECT_ID "zippchat-prod"');
    expect(
      loadConfig('worker', { ...base, FCM_PROJECT_ID: 'zippchat-test', FCM_CREDENTIALS_JSON: serviceAccount({ project_id: undefined }) }).fcm
        .projectId,
    ).toBe('zippchat-test');
    expect(loadConfig('api', { ...base, FCM_PROJECT_ID: 'zippchat-prod' }).fcm).toEqual({ projectId: 'zippchat-prod' });
    // The api never reads the service account: only FCM_PROJECT_ID decides `fcm: true`.
    expect(loadConfig('api', { ...base, FCM_CREDENTIALS_JSON: serviceAccount() }).fcm).toEqual({ projectId: undefined });
  });

  it('takes exactly one FCM credential source on the worker: the key or Application Default Credentials', () => {
    const worker = (env: Record<string, string>) => failure({ ...base, FCM_PROJECT_ID: 'zippchat-test', ...env }, 'worker');
    const both = worker({ FCM_CREDENTIALS_JSON: serviceAccount(), FCM_USE_ADC: 'true' });
    expect(both.message).toBe('config: FCM_USE_ADC must not be true together with FCM_CREDENTIALS_JSON: the worker takes one FCM credential source');
    expect(worker({ FCM_USE_ADC: 'maybe' }).variable).toBe('FCM_USE_ADC');
    expect(failure({ ...base, FCM_USE_ADC: 'true' }, 'worker').message).toBe('config: FCM_PROJECT_ID is required with FCM_USE_ADC');
    expect(worker({ FCM_USE_ADC: 'false' }).variable).toBe('FCM_PROJECT_ID');

    const adc = loadConfig('worker', { ...base, FCM_PROJECT_ID: 'zippchat-test', FCM_USE_ADC: 'true' }).fcm;
    expect(adc).toMatchObject({ projectId: 'zippchat-test', credentials: { kind: 'adc', credentialFile: undefined } });
    const dir = mkdtempSync(path.join(tmpdir(), 'adc-config-'));
    try {
      const file = (name: string, text: string) => {
        writeFileSync(path.join(dir, name), text);
        return path.join(dir, name);
      };
      const federation = file('federation.json', JSON.stringify({ type: 'external_account', audience: '//iam.googleapis.com/x' }));
      const withFile = loadConfig('worker', {
        ...base,
        FCM_PROJECT_ID: 'zippchat-test',
        FCM_USE_ADC: 'true',
        GOOGLE_APPLICATION_CREDENTIALS: federation,
      });
      expect(withFile.fcm.credentials).toEqual({ kind: 'adc', credentialFile: federation });
      const notJson = worker({ FCM_USE_ADC: 'true', GOOGLE_APPLICATION_CREDENTIALS: file('bad.json', 'SECRET-CONTENT{') });
      expect(notJson.variable).toBe('GOOGLE_APPLICATION_CREDENTIALS');
      expect(notJson.message).not.toContain('SECRET-CONTENT');
      expect(worker({ FCM_USE_ADC: 'true', GOOGLE_APPLICATION_CREDENTIALS: file('odd.json', '{"type":"odd"}') }).variable).toBe(
        'GOOGLE_APPLICATION_CREDENTIALS',
      );
      // Not there yet: mounted or written later, and read when it comes (no error at start).
      const later = path.join(dir, 'later.json');
      expect(
        loadConfig('worker', { ...base, FCM_PROJECT_ID: 'zippchat-test', FCM_USE_ADC: 'true', GOOGLE_APPLICATION_CREDENTIALS: later }).fcm
          .credentials,
      ).toEqual({
        kind: 'adc',
        credentialFile: later,
      });
      // There, but not a file that can be read.
      expect(worker({ FCM_USE_ADC: 'true', GOOGLE_APPLICATION_CREDENTIALS: dir }).message).toMatch(
        /^config: GOOGLE_APPLICATION_CREDENTIALS names a file that cannot be read \(EISDIR/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    // google-auth-library's debug log would print tokens.
    expect(worker({ FCM_USE_ADC: 'true', GOOGLE_SDK_NODE_LOGGING: '*' }).variable).toBe('GOOGLE_SDK_NODE_LOGGING');
  });

  it('turns the FCM budget off with a burst of 0, whatever the reserve', () => {
    expect(loadConfig('worker', { ...base, PUSH_FCM_WAKE_BURST: '0', PUSH_FCM_DM_RESERVE: '5' }).wakePolicy.fcmBudget).toEqual({
      burst: 0,
      refillMs: 180_000,
      dmReserve: 5,
    });
  });

  it("reads each process's own variables only", () => {
    const { JWT_SECRET: _, ...noJwt } = base;
    const foreign = { ...noJwt, NATS_URL: 'http://not-nats', FCM_CREDENTIALS_JSON: '{not json', JWT_PUBLIC_KEY: 'not a pem', PORT: 'eighty' };
    expect(() => loadConfig('worker', { ...foreign, NATS_URL: 'nats://ok:4222' })).toThrow('config: FCM_CREDENTIALS_JSON');
    expect(() => loadConfig('worker', { ...foreign, NATS_URL: 'nats://ok:4222', FCM_CREDENTIALS_JSON: '' })).not.toThrow();
    expect(() => loadConfig('bridge', { ...foreign, NATS_URL: 'nats://ok:4222' })).not.toThrow();
    expect(() => loadConfig('migrate', foreign)).not.toThrow();
  });

  it('reads BRIDGE_SIGNAL_BACKLOG_MS (250 by default, 0 turns pacing off), and names it when it is not a number of ms', () => {
    expect(loadConfig('bridge', base).signalBacklogMs).toBe(250);
    expect(loadConfig('bridge', { ...base, BRIDGE_SIGNAL_BACKLOG_MS: '0' }).signalBacklogMs).toBe(0);
    expect(failure({ ...base, BRIDGE_SIGNAL_BACKLOG_MS: '2s' }, 'bridge').message).toBe(
      'config: BRIDGE_SIGNAL_BACKLOG_MS must be an integer from 0 to 60000 (got "2s")',
    );
  });

  it.each([
    ['bridge', 'BRIDGE_CHANNEL_BACKLOG_MS', 'BRIDGE_SIGNAL_BACKLOG_MS'],
    ['api', 'API_REGISTRATION_BACKLOG_MS', 'BRIDGE_SIGNAL_BACKLOG_MS'],
  ] as const)('refuses the retired %s variable %s, naming what replaced it (%s)', (role, retired, instead) => {
    const message = failure({ ...base, [retired]: '250' }, role).message;
    expect(message).toMatch(new RegExp(`^config: ${retired} is no longer read; it was replaced by .*${instead}`));
  });

  it('reads BRIDGE_START_AT as an RFC 3339 instant, and names it when it is not one', () => {
    expect(loadConfig('bridge', base).bridgeStartAt).toBeUndefined();
    expect(loadConfig('bridge', { ...base, BRIDGE_START_AT: '2026-12-01T08:00:00+01:00' }).bridgeStartAt).toEqual(new Date('2026-12-01T07:00:00Z'));
    expect(failure({ ...base, BRIDGE_START_AT: '2026-12-01 08:00' }, 'bridge').message).toBe(
      'config: BRIDGE_START_AT must be an RFC 3339 date-time with an offset, e.g. 2026-12-01T00:00:00Z (got "2026-12-01 08:00")',
    );
  });
});

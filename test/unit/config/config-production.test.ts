/**
 * docs/design.md, Production connections: the settings that reach production services — secrets as files, Temporal TLS,
 * mTLS and API key, NATS credentials and TLS, PostgreSQL TLS in DATABASE_URL — each checked at
 * start with one line naming the variable, never quoting a secret.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, type Role } from '../../../src/config/index.js';
import { postgresConnection } from '../../../src/db/connection.js';
import { createCertificateAuthority, type CertificateAuthority, type IssuedCertificate } from '../../../devstack/pki.js';

const base = { DATABASE_URL: 'postgres://push@db.internal:5432/zippchat', JWT_SECRET: 'a-development-secret-of-at-least-32-bytes' };

let dir: string;
let ca: CertificateAuthority;
let client: IssuedCertificate;
let other: IssuedCertificate;
const file = (name: string, content: string) => {
  const p = path.join(dir, name);
  writeFileSync(p, content);
  return p;
};

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'config-tls-'));
  ca = await createCertificateAuthority(dir, 'test');
  client = await ca.issue('client', { usage: 'client' });
  other = await ca.issue('other', { usage: 'client' });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function failure(role: Role, env: Record<string, string>): ConfigError {
  try {
    loadConfig(role, { ...base, ...env });
  } catch (error) {
    if (error instanceof ConfigError) {
      expect(error.message).not.toContain('\n');
      return error;
    }
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('secrets as files (X_FILE)', () => {
  it('reads each secret from its file, dropping one trailing newline', () => {
    const { JWT_SECRET: _, DATABASE_URL: __, ...rest } = base;
    const config = loadConfig('api', {
      ...rest,
      DATABASE_URL_FILE: file('db-url', `${base.DATABASE_URL}\n`),
      JWT_SECRET_FILE: file('jwt', 'a-file-secret-that-is-at-least-32-bytes-long\n'),
    });
    expect(config.databaseUrl).toBe(base.DATABASE_URL);
    expect(new TextDecoder().decode(config.jwt.key.key as Uint8Array)).toBe('a-file-secret-that-is-at-least-32-bytes-long');
    const bridge = loadConfig('bridge', { ...base, NATS_USER: 'push', NATS_PASSWORD_FILE: file('nats-pass', 's3cret\n') });
    expect(bridge.nats.auth).toEqual({ kind: 'user', user: 'push', password: 's3cret' });
  });

  it('refuses both X and X_FILE, and an unreadable or empty file, naming the variable', () => {
    expect(failure('api', { JWT_SECRET_FILE: file('j2', 'x'.repeat(40)) }).message).toBe(
      'config: JWT_SECRET_FILE must not be set together with JWT_SECRET',
    );
    const missing = failure('api', { TEMPORAL_API_KEY_FILE: path.join(dir, 'nope') });
    expect(missing.variable).toBe('TEMPORAL_API_KEY_FILE');
    expect(missing.message).toContain('cannot be read (ENOENT');
    expect(failure('bridge', { NATS_TOKEN_FILE: file('empty', '\n') }).variable).toBe('NATS_TOKEN_FILE');
  });

  it('never echoes a secret read from a file', () => {
    const error = failure('api', { JWT_SECRET: '', JWT_SECRET_FILE: file('short', 'tiny-secret-from-file') });
    expect(error.variable).toBe('JWT_SECRET');
    expect(error.message).not.toContain('tiny-secret-from-file');
  });
});

describe('Temporal: TLS, mTLS, API key', () => {
  it('stays on plain TCP by default', () => {
    expect(loadConfig('worker', base).temporal.tls).toBeUndefined();
  });

  it('turns TLS on for any TEMPORAL_TLS_* or an API key, with system roots unless a CA file is given', () => {
    expect(loadConfig('worker', { ...base, TEMPORAL_TLS: 'true' }).temporal.tls).toEqual({});
    const cloud = loadConfig('bridge', { ...base, TEMPORAL_ADDRESS: 'ns.acct.tmprl.cloud:7233', TEMPORAL_API_KEY: 'key-123' }).temporal;
    expect(cloud).toMatchObject({ apiKey: 'key-123', tls: {} });
    const mtls = loadConfig('api', {
      ...base,
      TEMPORAL_TLS_CA_FILE: ca.caFile,
      TEMPORAL_TLS_CERT_FILE: client.certFile,
      TEMPORAL_TLS_KEY_FILE: client.keyFile,
      TEMPORAL_TLS_SERVER_NAME: 'temporal.internal',
    }).temporal.tls!;
    expect(mtls.serverNameOverride).toBe('temporal.internal');
    expect(mtls.serverRootCACertificate?.toString()).toBe(ca.caPem);
    expect(mtls.clientCertPair?.crt.toString()).toBe(client.certPem);
  });

  const refused: Array<[string, string, Record<string, string>]> = [
    ['an API key without TLS', 'TEMPORAL_TLS', { TEMPORAL_TLS: 'false', TEMPORAL_API_KEY: 'k' }],
    ['a certificate without its key', 'TEMPORAL_TLS_KEY_FILE', { TEMPORAL_TLS_CERT_FILE: 'CERT' }],
    ['a key without its certificate', 'TEMPORAL_TLS_CERT_FILE', { TEMPORAL_TLS_KEY_FILE: 'KEY' }],
    ['a key of another certificate', 'TEMPORAL_TLS_KEY_FILE', { TEMPORAL_TLS_CERT_FILE: 'CERT', TEMPORAL_TLS_KEY_FILE: 'OTHER_KEY' }],
    ['an unreadable CA file', 'TEMPORAL_TLS_CA_FILE', { TEMPORAL_TLS_CA_FILE: '/nonexistent/ca.pem' }],
    ['a CA file that is not PEM', 'TEMPORAL_TLS_CA_FILE', { TEMPORAL_TLS_CA_FILE: 'GARBAGE' }],
    ['a bad TEMPORAL_TLS', 'TEMPORAL_TLS', { TEMPORAL_TLS: 'sometimes' }],
    ['a bad server name', 'TEMPORAL_TLS_SERVER_NAME', { TEMPORAL_TLS_SERVER_NAME: 'not a name' }],
  ];
  it.each(refused)('refuses %s, naming %s', (_, variable, env) => {
    const files: Record<string, string> = {
      CERT: client.certFile,
      KEY: client.keyFile,
      OTHER_KEY: other.keyFile,
      GARBAGE: file('garbage.pem', 'hello'),
    };
    const resolved = Object.fromEntries(Object.entries(env).map(([k, v]) => [k, files[v] ?? v]));
    for (const role of ['api', 'worker', 'bridge', 'admin'] as const) expect(failure(role, resolved).variable).toBe(variable);
  });
});

describe('NATS: one way of authenticating, TLS', () => {
  const creds = () =>
    file(
      'user.creds',
      '-----BEGIN NATS USER JWT-----\neyJhbGciOi.payload.sig\n------END NATS USER JWT------\n\n-----BEGIN USER NKEY SEED-----\nSUAEXAMPLE\n------END USER NKEY SEED------\n',
    );

  it('reads creds, user/password or token, and TLS with a CA and client certificate', () => {
    expect(loadConfig('bridge', { ...base, NATS_CREDS_FILE: creds() }).nats.auth.kind).toBe('creds');
    expect(loadConfig('bridge', { ...base, NATS_TOKEN: 't0k' }).nats.auth).toEqual({ kind: 'token', token: 't0k' });
    const nats = loadConfig('bridge', {
      ...base,
      NATS_TLS_CA_FILE: ca.caFile,
      NATS_TLS_CERT_FILE: client.certFile,
      NATS_TLS_KEY_FILE: client.keyFile,
    }).nats;
    expect(nats.tls).toEqual({ ca: ca.caPem, cert: client.certPem, key: client.keyPem });
    expect(loadConfig('bridge', { ...base, NATS_URL: 'tls://nats.internal:4222' }).nats.tls).toEqual({});
  });

  it('refuses two ways at once, half a user, a file that is not .creds', () => {
    expect(failure('bridge', { NATS_TOKEN: 't', NATS_USER: 'u', NATS_PASSWORD: 'p' }).message).toBe(
      'config: NATS_TOKEN must not be set together with NATS_USER (one way of authenticating)',
    );
    expect(failure('bridge', { NATS_USER: 'u' }).variable).toBe('NATS_PASSWORD');
    expect(failure('bridge', { NATS_PASSWORD: 'p' }).variable).toBe('NATS_USER');
    expect(failure('bridge', { NATS_CREDS_FILE: file('not.creds', 'hello') }).variable).toBe('NATS_CREDS_FILE');
    expect(failure('bridge', { NATS_TLS_CERT_FILE: client.certFile }).variable).toBe('NATS_TLS_KEY_FILE');
  });
});

describe('PostgreSQL TLS in DATABASE_URL', () => {
  const url = (query: string) => `postgres://push:pw@db.internal:5432/zippchat?${query}`;

  it('verify-full verifies chain and name; verify-ca only the chain; require without a root neither', () => {
    const full = postgresConnection(url(`sslmode=verify-full&sslrootcert=${ca.caFile}`));
    expect(full.url).toBe('postgres://push:pw@db.internal:5432/zippchat');
    expect(full.ssl).toMatchObject({ ca: ca.caPem, rejectUnauthorized: true });
    expect(full.ssl && full.ssl.checkServerIdentity).toBeUndefined();
    const chainOnly = postgresConnection(url(`sslmode=verify-ca&sslrootcert=${ca.caFile}`)).ssl;
    expect(chainOnly && chainOnly.checkServerIdentity?.('elsewhere', {} as never)).toBeUndefined();
    expect(postgresConnection(url('sslmode=require')).ssl).toEqual({ rejectUnauthorized: false });
    expect(postgresConnection(url(`sslmode=require&sslrootcert=${ca.caFile}`)).ssl).toMatchObject({ rejectUnauthorized: true });
    expect(postgresConnection(url(`sslmode=verify-full&sslrootcert=system`)).ssl).toEqual({ rejectUnauthorized: true });
    expect(
      postgresConnection(url(`sslmode=verify-full&sslrootcert=${ca.caFile}&sslcert=${client.certFile}&sslkey=${client.keyFile}`)).ssl,
    ).toMatchObject({
      cert: client.certPem,
      key: client.keyPem,
    });
    expect(postgresConnection(url('sslmode=disable')).ssl).toBe(false);
    expect(postgresConnection('postgres://push@db/zippchat').ssl).toBe(false);
  });

  it('refuses what libpq would do differently, naming DATABASE_URL and never quoting it', () => {
    for (const query of ['sslmode=prefer', 'sslmode=verify-full', `sslmode=verify-full&sslrootcert=/nope/ca.pem`, `sslcert=${client.certFile}`]) {
      const error = failure('migrate', { DATABASE_URL: url(query) });
      expect(error.variable).toBe('DATABASE_URL');
      expect(error.message).not.toContain(':pw@');
    }
  });
});

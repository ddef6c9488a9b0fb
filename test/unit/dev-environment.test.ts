/** `make up` / `make dev`: the caller's environment wins, the stack's defaults fill the rest. */
import { describe, expect, it } from 'vitest';
import { variablesRead } from '../../src/config/index.js';
import { assembleStackEnvironment, describeStackEnvironment, type StackDefaults } from '../../devstack/environment.js';

const defaults: StackDefaults = {
  env: {
    DATABASE_URL: 'postgres://postgres@127.0.0.1:55432/zippchat',
    NATS_URL: 'nats://127.0.0.1:54222',
    PORT: '58080',
    JWT_SECRET: 'stack-secret-0123456789abcdef0123456789',
    PUSH_UP_ALLOW_PRIVATE: 'true',
    PUSH_MIN_INTERVAL_MS: '15000',
    PUSH_REWAKE_AFTER_MS: '900000',
  },
  fcmStandIn: { FCM_PROJECT_ID: 'zippchat-dev', FCM_CREDENTIALS_JSON: '{"stand-in":true}', FCM_ENDPOINT: 'http://127.0.0.1:59467' },
};

describe('the stack environment', () => {
  it('takes the defaults, with the local FCM stand-in, when the caller sets nothing', () => {
    const { env, sources, fcmStandIn } = assembleStackEnvironment({ PATH: '/usr/bin', HOME: '/root' }, defaults);
    expect(env).toEqual({ ...defaults.env, ...defaults.fcmStandIn });
    expect(new Set(Object.values(sources))).toEqual(new Set(['stack']));
    expect(fcmStandIn).toBe(true);
  });

  it('passes on every variable a service’s configuration reads (BRIDGE_START_AT was once left out)', () => {
    const nonFcm = variablesRead('all').filter((name) => !name.startsWith('FCM_') && name !== 'JWT_PUBLIC_KEY');
    const caller = Object.fromEntries(nonFcm.map((name) => [name, `caller-${name}`]));
    const { env, sources } = assembleStackEnvironment(caller, defaults);
    for (const name of nonFcm) {
      expect(env[name], name).toBe(`caller-${name}`);
      expect(sources[name], name).toBe('caller');
    }
  });

  it('lets every variable the caller sets win, and only those', () => {
    const caller = {
      PUSH_MIN_INTERVAL_MS: '3000',
      PORT: '18080',
      PUSH_UP_ALLOW_PRIVATE: 'false',
      PUSH_FCM_WAKE_BURST: '0',
      LOG_LEVEL: 'debug',
      DEV_PG_PORT: '1',
    };
    const { env, sources } = assembleStackEnvironment(caller, defaults);
    expect(env).toMatchObject({
      PUSH_MIN_INTERVAL_MS: '3000',
      PORT: '18080',
      PUSH_UP_ALLOW_PRIVATE: 'false',
      PUSH_FCM_WAKE_BURST: '0',
      LOG_LEVEL: 'debug',
    });
    expect(env.PUSH_REWAKE_AFTER_MS).toBe('900000');
    expect(env).not.toHaveProperty('DEV_PG_PORT'); // the stack's own knobs are not service variables
    expect(sources).toMatchObject({ PUSH_MIN_INTERVAL_MS: 'caller', PORT: 'caller', PUSH_REWAKE_AFTER_MS: 'stack' });
  });

  it('treats a blank value as unset, as the services do', () => {
    expect(assembleStackEnvironment({ PUSH_MIN_INTERVAL_MS: '  ' }, defaults).env.PUSH_MIN_INTERVAL_MS).toBe('15000');
  });

  it('uses the caller’s FCM settings alone when any is given: no stand-in value is mixed in', () => {
    const caller = { FCM_PROJECT_ID: 'my-firebase', FCM_CREDENTIALS_JSON: '{"type":"service_account"}' };
    const { env, sources, fcmStandIn } = assembleStackEnvironment(caller, defaults);
    expect(fcmStandIn).toBe(false);
    expect(env.FCM_PROJECT_ID).toBe('my-firebase');
    expect(env.FCM_CREDENTIALS_JSON).toBe('{"type":"service_account"}');
    expect(env).not.toHaveProperty('FCM_ENDPOINT'); // the real one by default, not the stand-in
    expect(sources.FCM_PROJECT_ID).toBe('caller');
    // Only a project id (an api that reports fcm: true): still no stand-in credentials.
    const apiOnly = assembleStackEnvironment({ FCM_PROJECT_ID: 'my-firebase' }, defaults);
    expect(apiOnly.fcmStandIn).toBe(false);
    expect(apiOnly.env).not.toHaveProperty('FCM_CREDENTIALS_JSON');
    // The key as a file (`X_FILE`).
    const fromFile = assembleStackEnvironment({ FCM_PROJECT_ID: 'my-firebase', FCM_CREDENTIALS_JSON_FILE: '/run/secrets/fcm.json' }, defaults);
    expect(fromFile.env).toMatchObject({ FCM_PROJECT_ID: 'my-firebase', FCM_CREDENTIALS_JSON_FILE: '/run/secrets/fcm.json' });
    expect(fromFile.env).not.toHaveProperty('FCM_CREDENTIALS_JSON');
    // Application Default Credentials instead of a key: the stand-in's key would be a second source.
    const adc = assembleStackEnvironment({ FCM_USE_ADC: 'true', GOOGLE_APPLICATION_CREDENTIALS: '/home/me/federation.json' }, defaults);
    expect(adc.fcmStandIn).toBe(false);
    expect(adc.env).toEqual({ ...defaults.env, FCM_USE_ADC: 'true', GOOGLE_APPLICATION_CREDENTIALS: '/home/me/federation.json' });
    // A gcloud user's GOOGLE_APPLICATION_CREDENTIALS alone does not turn the stand-in off.
    expect(assembleStackEnvironment({ GOOGLE_APPLICATION_CREDENTIALS: '/home/me/adc.json' }, defaults).fcmStandIn).toBe(true);
  });

  it('keeps the stand-in for a shell that sourced .dev/env (the caller’s FCM settings are the stand-in’s)', () => {
    const { fcmStandIn, env } = assembleStackEnvironment({ ...defaults.fcmStandIn }, defaults);
    expect(fcmStandIn).toBe(true);
    expect(env).toMatchObject(defaults.fcmStandIn);
  });

  it('drops the stack’s secret when the caller gives it as a file, or another JWT key', () => {
    const fromFile = assembleStackEnvironment({ JWT_SECRET_FILE: '/run/secrets/jwt', DATABASE_URL_FILE: '/run/secrets/db' }, defaults);
    expect(fromFile.env).not.toHaveProperty('JWT_SECRET');
    expect(fromFile.env).not.toHaveProperty('DATABASE_URL');
    expect(fromFile.env).toMatchObject({ JWT_SECRET_FILE: '/run/secrets/jwt', DATABASE_URL_FILE: '/run/secrets/db' });
    const publicKey = assembleStackEnvironment({ JWT_PUBLIC_KEY: '-----BEGIN PUBLIC KEY-----…' }, defaults);
    expect(publicKey.env).not.toHaveProperty('JWT_SECRET');
  });

  it('describes what is in force with secrets masked and the caller’s values marked', () => {
    const lines = describeStackEnvironment(
      assembleStackEnvironment({ PUSH_MIN_INTERVAL_MS: '3000', DATABASE_URL: 'postgres://app:hunter2@db.example/zippchat' }, defaults),
    );
    expect(lines).toContainEqual(expect.stringMatching(/^PUSH_MIN_INTERVAL_MS +3000 +\(yours\)$/));
    expect(lines).toContainEqual(expect.stringMatching(/^DATABASE_URL +postgres:\/\/app:\*\*\*@db\.example\/zippchat +\(yours\)$/));
    expect(lines).toContainEqual(expect.stringMatching(/^JWT_SECRET +\(set\)$/));
    expect(lines.join('\n')).not.toContain('hunter2');
    expect(lines.join('\n')).not.toContain('stack-secret');
    expect(lines.join('\n')).not.toContain('stand-in":true');
  });
});

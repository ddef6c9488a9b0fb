/** The command lines of simulate-device and push-admin: what they accept, and the one-line reason when they refuse. */
import { describe, expect, it } from 'vitest';
import { AdminUsageError, parseAdminArgs } from '../../../src/admin/admin-cli.js';
import { parseSimulatorArgs, UsageError } from '../../../simulator/cli-options.js';

describe('simulate-device arguments', () => {
  it('defaults to UnifiedPush with keys on a free loopback port, until Ctrl-C', () => {
    expect(parseSimulatorArgs(['--api', 'http://127.0.0.1:8080/', '--token', 'jwt'])).toEqual({
      apiUrl: 'http://127.0.0.1:8080',
      token: { kind: 'jwt', jwt: 'jwt' },
      transport: 'unifiedpush',
      keys: true,
      fcmStandIn: undefined,
      fcmLowerHigh: false,
      listen: { host: '127.0.0.1', port: 0 },
      publicUrl: undefined,
      wakes: undefined,
      timeoutMs: undefined,
      keepRegistration: false,
      testWake: false,
      json: false,
    });
  });

  it('mints a token from a secret file for a user and device', () => {
    const options = parseSimulatorArgs([
      '--api',
      'https://push.example',
      '--jwt-secret-file',
      's',
      '--user',
      '17',
      '--device',
      'p',
      '--wakes',
      '2',
      '--timeout',
      '5',
    ]);
    expect(options).toMatchObject({ token: { kind: 'mint', secretFile: 's', userId: '17', deviceId: 'p' }, wakes: 2, timeoutMs: 5_000 });
  });

  it('listens where told, for an instance that reaches it through a public URL', () => {
    const options = parseSimulatorArgs([
      '--api',
      'https://push.example',
      '--token',
      'x',
      '--listen',
      '[::]:8443',
      '--public-url',
      'https://tunnel.example/',
    ]);
    expect(options).toMatchObject({ listen: { host: '::', port: 8443 }, publicUrl: 'https://tunnel.example' });
  });

  it.each([
    [['--token', 'x'], '--api is required'],
    [['--api', 'ftp://x', '--token', 'x'], '--api must be an http(s) URL'],
    [['--api', 'http://x'], 'give exactly one of --token, --token-file, --jwt-secret-file'],
    [['--api', 'http://x', '--token', 'x', '--token-file', 'f'], 'give exactly one of'],
    [['--api', 'http://x', '--jwt-secret-file', 's', '--device', 'p'], '--jwt-secret-file needs --user'],
    [['--api', 'http://x', '--jwt-secret-file', 's', '--user', '1'], '--jwt-secret-file needs --device'],
    [['--api', 'http://x', '--token', 'x', '--transport', 'apns'], '--transport must be unifiedpush or fcm'],
    [['--api', 'http://x', '--token', 'x', '--transport', 'fcm'], '--transport fcm needs --fcm-stand-in'],
    [['--api', 'http://x', '--token', 'x', '--fcm-lower-high'], '--fcm-lower-high needs --transport fcm'],
    [['--api', 'http://x', '--token', 'x', '--wakes', '0'], '--wakes must be a positive integer'],
    [['--api', 'http://x', '--token', 'x', '--listen', 'localhost'], '--listen must be HOST:PORT'],
    [['--api', 'http://x', '--token', 'x', '--bogus'], "Unknown option '--bogus'"],
  ])('refuses %j', (args, message) => {
    expect(() => parseSimulatorArgs(args)).toThrow(UsageError);
    expect(() => parseSimulatorArgs(args)).toThrow(message);
  });
});

describe('push-admin arguments', () => {
  it('reads the inspecting commands', () => {
    expect(parseAdminArgs(['device', '12', 'phone:1'])).toEqual({ command: 'device', userId: '12', deviceId: 'phone:1', json: false });
    expect(parseAdminArgs(['prune', '12', 'p', '--json'])).toEqual({ command: 'prune', userId: '12', deviceId: 'p', json: true });
    expect(parseAdminArgs(['count'])).toEqual({ command: 'count', json: false });
    expect(parseAdminArgs(['wake', '12', 'p'])).toEqual({ command: 'wake', userId: '12', deviceId: 'p', json: false, timeoutMs: 30_000 });
    expect(parseAdminArgs(['wake', '12', 'p', '--timeout', '5', '--json'])).toMatchObject({ timeoutMs: 5_000, json: true });
    expect(parseAdminArgs([])).toEqual({ command: 'help' });
    expect(parseAdminArgs(['--help'])).toEqual({ command: 'help' });
  });

  it('reads the way back: the wedged list, one restart, every wedged one', () => {
    expect(parseAdminArgs(['wedged'])).toEqual({ command: 'wedged', json: false });
    expect(parseAdminArgs(['restart', '12', 'p'])).toEqual({ command: 'restart', userId: '12', deviceId: 'p', json: false });
    expect(parseAdminArgs(['restart', '--wedged', '--json'])).toEqual({ command: 'restart-wedged', json: true });
  });

  it.each([
    [['device', 'alice', 'p'], 'user_id must be a decimal id'],
    [['device', '12'], 'unknown or incomplete command'],
    [['prune', '12', ''], 'device_id must not be empty'],
    [['count', 'extra'], 'unknown or incomplete command'],
    [['drop-everything'], 'unknown or incomplete command'],
    [['restart'], 'unknown or incomplete command'],
    [['restart', '--wedged', '12', 'p'], 'restart takes <user_id> <device_id> or --wedged, not both'],
    [['wedged', '--wedged'], '--wedged goes with restart only'],
    [['wake', '12', 'p', '--timeout', '0'], '--timeout must be whole seconds'],
    [['wake', '12', 'p', '--timeout', 'soon'], '--timeout must be whole seconds'],
  ])('refuses %j', (args, message) => {
    expect(() => parseAdminArgs(args)).toThrow(AdminUsageError);
    expect(() => parseAdminArgs(args)).toThrow(message);
  });
});

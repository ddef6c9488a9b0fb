/**
 * `make up` with the caller's settings: the built stack command (`dist-tools/devstack/cli.js
 * up`, what `make up` runs) into a private DEV_DIR on free ports, with PUSH_MIN_INTERVAL_MS and
 * one's own FCM project in the environment. Those are what the processes run with and what
 * `.dev/env` and the summary show; the local FCM stand-in is not started. And with a setting
 * the worker refuses, `make up` stops as soon as the worker exits and prints the worker's line.
 */
import { execFile } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { daemonPid } from '../../devstack/daemons.js';
import { removeCluster } from '../../devstack/postgres.js';
import { createServiceAccount } from '../../devstack/stand-ins/google-oauth.js';
import { projectRoot } from '../../src/process/paths.js';
import { signDeviceToken } from '../support/jwt.js';
import { freePort } from '../../devstack/ports.js';

const run = promisify(execFile);
const dir = path.join(projectRoot, '.dev', `stack-test-${process.pid}`);
const stack = path.join(projectRoot, 'dist-tools', 'devstack', 'cli.js');
const credentials = createServiceAccount('my-firebase').keyFile('https://oauth2.example/token');
let env: Record<string, string>;
let output = '';

beforeAll(async () => {
  const ports: Record<string, string> = {};
  for (const name of ['PG', 'NATS', 'TEMPORAL', 'TEMPORAL_UI', 'API', 'WORKER_METRICS', 'BRIDGE_METRICS', 'WORKER_SDK_METRICS', 'FCM']) {
    ports[`DEV_${name}_PORT`] = String(await freePort());
  }
  env = {
    PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', // runuser (PostgreSQL as root) is in sbin
    DEV_DIR: dir,
    ...ports,
    // The caller's choices.
    PUSH_MIN_INTERVAL_MS: '3000',
    FCM_PROJECT_ID: 'my-firebase',
    FCM_CREDENTIALS_JSON: credentials,
  };
  const result = await run(process.execPath, [stack, 'up'], { env, cwd: projectRoot, maxBuffer: 16 << 20 });
  output = result.stdout;
}, 240_000);
afterAll(async () => {
  await run(process.execPath, [stack, 'down'], { env, cwd: projectRoot }).catch(() => undefined);
  removeCluster(dir);
  rmSync(dir, { recursive: true, force: true });
});

/** The environment a running daemon of the stack was started with. */
function environOf(name: string): Map<string, string> {
  const pid = daemonPid(dir, name);
  if (pid === undefined) throw new Error(`${name} is not running`);
  const entries = readFileSync(`/proc/${pid}/environ`, 'utf8')
    .split('\0')
    .filter((e) => e.includes('='));
  return new Map(entries.map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]));
}

describe('make up with the caller’s environment', () => {
  it('runs every process with the caller’s values, and the stack’s defaults only for the rest', () => {
    for (const app of ['api', 'worker', 'bridge']) {
      const environ = environOf(app);
      expect(environ.get('PUSH_MIN_INTERVAL_MS'), app).toBe('3000');
      expect(environ.get('FCM_PROJECT_ID'), app).toBe('my-firebase');
      expect(environ.get('FCM_CREDENTIALS_JSON'), app).toBe(credentials);
      expect(environ.has('FCM_ENDPOINT'), app).toBe(false); // Google's, not the stand-in's
      expect(environ.get('PUSH_REWAKE_AFTER_MS'), app).toBe('900000'); // unset by the caller: the design's
    }
    expect(daemonPid(dir, 'fcm-stand-in')).toBeUndefined();
  });

  it('writes what is in force to .dev/env and says so at start', async () => {
    const file = readFileSync(path.join(dir, 'env'), 'utf8');
    expect(file).toContain(`export PUSH_MIN_INTERVAL_MS='3000'`);
    expect(file).toContain(`export FCM_PROJECT_ID='my-firebase'`);
    expect(file).not.toContain('FCM_ENDPOINT');
    expect(file).toMatch(/^export API_URL='http:\/\/127\.0\.0\.1:\d+'$/m);
    expect(output).toMatch(/^ +PUSH_MIN_INTERVAL_MS +3000 +\(yours\)$/m);
    expect(output).toMatch(/^ +FCM_PROJECT_ID +my-firebase +\(yours\)$/m);
    expect(output).toMatch(/^ +PUSH_REWAKE_AFTER_MS +900000$/m);
    expect(output).toContain('the local FCM stand-in is not started');
    expect(output).not.toContain('BEGIN PRIVATE KEY');

    // The api in force reports the caller's FCM project.
    const apiUrl = /^export API_URL='([^']+)'$/m.exec(file)![1]!;
    const secret = /^export JWT_SECRET='([^']+)'$/m.exec(file)![1]!;
    const token = await signDeviceToken({ userId: '1', deviceId: 'phone', secret });
    const config = await (await fetch(`${apiUrl}/api/push/config`, { headers: { authorization: `Bearer ${token}` } })).json();
    expect(config).toMatchObject({ fcm: true, unifiedpush: true });
  });
});

describe('make up with a setting the processes refuse', () => {
  it('stops as soon as a process exits, and prints the line that process wrote', async () => {
    const failed = await run(process.execPath, [stack, 'up'], {
      env: { ...env, PUSH_MIN_INTERVAL_MS: 'often' },
      cwd: projectRoot,
      maxBuffer: 16 << 20,
    }).then(
      () => undefined,
      (error: { code: number; stderr: string }) => error,
    );
    expect(failed?.code).toBe(1);
    // The api and the worker both read the wake policy: whichever exits first is named, with its own log.
    const named = /^stack: (api|worker) exited while starting/.exec(failed?.stderr ?? '')?.[1];
    expect(failed?.stderr).toBe(
      `stack: ${named} exited while starting: config: PUSH_MIN_INTERVAL_MS must be an integer from 1 to 86400000 (got "often")\n(log: ${path.join(dir, 'logs', `${named}.log`)})\n`,
    );
  }, 180_000);
});

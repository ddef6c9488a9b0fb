/**
 * `push-admin`: the operator's view of an instance, from the service's own configuration
 * (DATABASE_URL, TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_UI_URL):
 *
 *   push-admin device <user_id> <device_id>   registration (no secrets), FCM budget, back-off, pending rows, sessions, workflow state, Web UI link
 *   push-admin count                          registrations by transport, pending rows
 *   push-admin prune <user_id> <device_id>    delete one registration as DELETE /api/push/registration does
 *   push-admin wedged                         the registration workflows that cannot make progress (Temporal flags them)
 *   push-admin restart <user_id> <device_id>  end the device's workflow and start it anew from its registration
 *   push-admin restart --wedged               the same for every wedged registration workflow
 *   push-admin wake <user_id> <device_id>     one test wake as POST /api/push/registration/test asks for, and the provider's answer
 *
 * `--json` prints one JSON document instead of text.
 */
import { parseArgs } from 'node:util';
import type { AdminConfig } from '../config/index.js';
import { createDatabasePool } from '../db/pool.js';
import { createTemporalClient } from '../../temporal/client.js';
import { inspectDevice } from './device-report.js';
import { formatCounts, formatDeviceReport, formatPrune, formatTestWake } from './format.js';
import { pruneRegistration } from './prune-registration.js';
import { countRegistrations } from './registration-counts.js';
import { formatRestart, formatWedged, formatWedgedRestarts } from './format-wedged.js';
import { restartRegistration, restartWedged, type RestartDeps } from './restart-workflows.js';
import { listWedgedRegistrations, type WedgedRegistration } from '../../temporal/wedged-workflows.js';
import { testWakeDevice } from './test-wake.js';

export const adminUsage = `usage: push-admin device <user_id> <device_id> [--json]
       push-admin count [--json]
       push-admin prune <user_id> <device_id> [--json]
       push-admin wedged [--json]
       push-admin restart (<user_id> <device_id> | --wedged) [--json]
       push-admin wake <user_id> <device_id> [--timeout S] [--json]

Reads DATABASE_URL, TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_TASK_QUEUE and
TEMPORAL_UI_URL (optional, for Web UI links) like the services do. Never prints a push
token, endpoint or key.`;

export type AdminCommand =
  | { readonly command: 'device' | 'prune'; readonly userId: string; readonly deviceId: string; readonly json: boolean }
  | { readonly command: 'wake'; readonly userId: string; readonly deviceId: string; readonly json: boolean; readonly timeoutMs: number }
  | { readonly command: 'count'; readonly json: boolean }
  | { readonly command: 'wedged'; readonly json: boolean }
  | { readonly command: 'restart-wedged'; readonly json: boolean }
  | { readonly command: 'restart'; readonly userId: string; readonly deviceId: string; readonly json: boolean }
  | { readonly command: 'help' };

export class AdminUsageError extends Error {
  override readonly name = 'AdminUsageError';
}

export function parseAdminArgs(args: readonly string[]): AdminCommand {
  let parsed: { values: { json?: boolean; help?: boolean; wedged?: boolean; timeout?: string }; positionals: string[] };
  try {
    parsed = parseArgs({
      args: [...args],
      allowPositionals: true,
      options: { json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' }, wedged: { type: 'boolean' }, timeout: { type: 'string' } },
    });
  } catch (error) {
    throw new AdminUsageError(error instanceof Error ? error.message : String(error));
  }
  const [command, ...rest] = parsed.positionals;
  const json = parsed.values.json === true;
  if (parsed.values.help === true || command === undefined || command === 'help') return { command: 'help' };
  if (parsed.values.wedged === true && command !== 'restart') throw new AdminUsageError('--wedged goes with restart only');
  if (command === 'count' && rest.length === 0) return { command, json };
  if (command === 'wedged' && rest.length === 0) return { command, json };
  if (command === 'restart' && parsed.values.wedged === true) {
    if (rest.length > 0) throw new AdminUsageError('restart takes <user_id> <device_id> or --wedged, not both');
    return { command: 'restart-wedged', json };
  }
  if ((command === 'device' || command === 'prune' || command === 'restart' || command === 'wake') && rest.length === 2) {
    const [userId, deviceId] = rest as [string, string];
    if (!/^[1-9]\d{0,18}$/.test(userId)) throw new AdminUsageError(`user_id must be a decimal id (got "${userId}")`);
    if (deviceId === '') throw new AdminUsageError('device_id must not be empty');
    if (command === 'wake') return { command, userId, deviceId, json, timeoutMs: wakeTimeoutMs(parsed.values.timeout) };
    return { command, userId, deviceId, json };
  }
  throw new AdminUsageError(`unknown or incomplete command: ${parsed.positionals.join(' ')}`);
}

/** `--timeout S` of `wake`: how long to wait for the provider's answer (default 30 s). */
function wakeTimeoutMs(value: string | undefined): number {
  if (value === undefined) return 30_000;
  if (!/^\d{1,4}$/.test(value) || Number(value) < 1) throw new AdminUsageError(`--timeout must be whole seconds, 1 or more (got "${value}")`);
  return Number(value) * 1_000;
}

/**
 * Runs one command; returns the process exit code: 0, or 4 when the device has no
 * registration (`restart`: neither a registration nor a workflow), or 1 when a restart of a
 * wedged workflow failed; `wake` 2 when the provider did not accept the test wake (held back,
 * refused, or no answer in time). The configuration is loaded only when a command needs it
 * (`help` does not).
 */
export async function runAdmin(command: AdminCommand, loadConfig: () => AdminConfig, out: (line: string) => void): Promise<number> {
  if (command.command === 'help') {
    out(adminUsage);
    return 0;
  }
  const config = loadConfig();
  const pool = await createDatabasePool(config.databaseUrl, { maximumPoolSize: 2, statementTimeoutMs: 10_000 });
  const temporal = createTemporalClient(config.temporal);
  try {
    const print = (value: unknown, lines: string[]) => (command.json ? out(JSON.stringify(value, null, 2)) : lines.forEach((line) => out(line)));
    if (command.command === 'count') {
      const counts = await countRegistrations(pool);
      print(counts, formatCounts(counts));
      return 0;
    }
    if (command.command === 'wedged' || command.command === 'restart' || command.command === 'restart-wedged') {
      return await runWedged(command, { pool, temporal: temporal.client, taskQueue: config.temporal.taskQueue }, print);
    }
    if (command.command === 'device') {
      const deps = {
        pool,
        temporal: temporal.client,
        namespace: config.temporal.namespace,
        uiUrl: config.temporal.uiUrl,
        policy: config.wakePolicy,
      };
      const report = await inspectDevice(deps, command.userId, command.deviceId);
      print(report, formatDeviceReport(report));
      return report.registration === null ? 4 : 0;
    }
    if (command.command === 'wake') {
      const deps = { pool, temporal: temporal.client, taskQueue: config.temporal.taskQueue, policy: config.wakePolicy, timeoutMs: command.timeoutMs };
      const report = await testWakeDevice(deps, command.userId, command.deviceId);
      print(report, formatTestWake(report));
      return report.outcome === 'no-registration' ? 4 : report.outcome === 'accepted' ? 0 : 2;
    }
    const result = await pruneRegistration(pool, temporal.client, command.userId, command.deviceId);
    print(result, formatPrune(command.userId, command.deviceId, result));
    return result.deleted ? 0 : 4;
  } finally {
    await temporal.close();
    await pool.end();
  }
}

async function runWedged(
  command: Extract<AdminCommand, { command: 'wedged' | 'restart' | 'restart-wedged' }>,
  deps: RestartDeps,
  print: (value: unknown, lines: string[]) => void,
): Promise<number> {
  if (command.command === 'wedged') {
    const wedged: WedgedRegistration[] = [];
    for await (const w of listWedgedRegistrations(deps.temporal, deps.taskQueue)) wedged.push(w);
    print(wedged, formatWedged(deps.taskQueue, wedged));
    return 0;
  }
  if (command.command === 'restart') {
    const result = await restartRegistration(deps, command);
    print(result, [formatRestart(result)]);
    return result.outcome === 'absent' ? 4 : 0;
  }
  const restarts = await restartWedged(deps);
  print(restarts, formatWedgedRestarts(restarts));
  return restarts.failures.length > 0 ? 1 : 0;
}

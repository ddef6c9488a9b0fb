/**
 * Signal → wake on the dev server with the claim and send as local activities (our choice)
 * and as regular ones (the reference): the latency of a device's first wake and the history
 * events it costs. These numbers back the decision in docs/architecture.md.
 */
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { sql } from 'slonik';
import { loadConfig } from '../../src/config/index.js';
import { createLogger } from '../../src/log.js';
import type { FakeDistributor } from '../../simulator/distributor.js';
import { createTransports } from '../../src/transports/index.js';
import { registrationWorkflowId, registrationWorkflowType } from '../../temporal/names.js';
import { buildWorker } from '../../temporal/worker.js';
import { pendingSignal, type RegistrationWorkflowInput } from '../../workflows/registration-messages.js';
import type { Report } from '../report.js';
import type { BenchSettings } from '../settings.js';
import { setupProse } from '../setup-prose.js';
import { devicesFor, insertRegistrations, nextIds, seedUsers } from '../seed.js';
import type { BenchStack } from '../stack.js';
import { benchTemporalConnection } from '../temporal-connection.js';
import { quantile, sleep } from '../stats.js';

export async function measureWakePath(stack: BenchStack, report: Report, settings: BenchSettings, distributor: FakeDistributor): Promise<void> {
  const section = report.section('wake-path', 'Wake path: local vs regular activities');
  const connection = await Connection.connect(benchTemporalConnection(stack.temporalEnv));
  const client = new Client({ connection });
  const nativeConnection = await NativeConnection.connect(benchTemporalConnection(stack.temporalEnv));
  const config = loadConfig('worker', { DATABASE_URL: stack.databaseUrl, PUSH_UP_ALLOW_PRIVATE: 'true', PUSH_UP_ALLOW_HTTP: 'true' });
  const log = createLogger({ level: 'silent', name: 'bench' });
  const transports = createTransports(config, log);
  const taskQueue = 'bench-wake-path';
  const worker = await buildWorker({
    connection: nativeConnection,
    namespace: 'default',
    taskQueue,
    pool: stack.pool,
    log,
    policy: config.wakePolicy,
    transports,
    temporal: client,
  });
  const running = worker.run();
  const results: Record<string, { p50: number; p95: number; events: number }> = {};
  try {
    for (const kind of ['local', 'regular'] as const) {
      results[kind] = await measureKind(kind, { stack, client, distributor, taskQueue, devices: settings.wakePath.devices });
    }
  } finally {
    worker.shutdown();
    await running;
    await transports.close();
    await nativeConnection.close();
    await connection.close();
  }
  const { local, regular } = results as Record<'local' | 'regular', { p50: number; p95: number; events: number }>;
  const reference = 'regular activities';
  report.figure(section, {
    name: 'signal-with-start → wake, p50',
    value: local.p50,
    unit: 'ms',
    reference: { name: reference, value: regular.p50 },
    headline: 'local activities',
  });
  report.figure(section, { name: 'signal-with-start → wake, p95', value: local.p95, unit: 'ms', reference: { name: reference, value: regular.p95 } });
  report.figure(section, {
    name: 'history events: start + one wake',
    value: local.events,
    unit: 'events',
    reference: { name: reference, value: regular.events },
    headline: 'local activities',
  });
  section.setup.push(...setupProse('wake-path', { devices: settings.wakePath.devices }));
}

async function measureKind(
  kind: 'local' | 'regular',
  deps: { stack: BenchStack; client: Client; distributor: FakeDistributor; taskQueue: string; devices: number },
): Promise<{ p50: number; p95: number; events: number }> {
  const { stack, client, distributor, taskQueue } = deps;
  const devices = devicesFor(await seedUsers(stack.pool, deps.devices), distributor);
  const registrations = await insertRegistrations(stack.pool, devices);
  const [channelId] = nextIds(1);
  const latencies: number[] = [];
  for (const [i, device] of devices.entries()) {
    await stack.pool.query(sql.unsafe`
      INSERT INTO push_pending (registration_id, channel_id, message_count, first_message_id, first_at, last_message_id, is_dm)
      VALUES (${registrations[i]!}, ${channelId!}, 1, 1, now(), 1, true)`);
    const input = { userId: device.userId, deviceId: device.deviceId, transport: 'unifiedpush', activityKind: kind } as RegistrationWorkflowInput;
    const before = distributor.received.length;
    const started = performance.now();
    await client.workflow.signalWithStart(registrationWorkflowType, {
      taskQueue,
      workflowId: registrationWorkflowId(device.userId, device.deviceId),
      args: [input],
      signal: pendingSignal,
      signalArgs: [],
    });
    while (!distributor.received.slice(before).some((m) => m.endpoint === device.endpoint)) await sleep(1);
    latencies.push(performance.now() - started);
  }
  const first = devices[0]!;
  const history = await client.workflow.getHandle(registrationWorkflowId(first.userId, first.deviceId)).fetchHistory();
  return { p50: quantile(latencies, 0.5), p95: quantile(latencies, 0.95), events: history.events?.length ?? 0 };
}

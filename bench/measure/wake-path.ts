/**
 * Signal → wake on the dev server with the claim and send as local activities (ours: the
 * registration workflow, from the production bundle) and as regular ones (the reference: the
 * same workflow bundled from source with bench/workflows/regular-activities.ts standing for
 * `@temporalio/workflow`, which makes its local activities regular ones): the latency of a
 * device's first wake and the history events it costs. These numbers back the decision in
 * docs/architecture.md.
 */
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, type Worker, type WorkerOptions } from '@temporalio/worker';
import { sql } from 'slonik';
import {
  buildWorker,
  createLogger,
  createTransports,
  loadConfig,
  newRunInput,
  pendingSignal,
  registrationWorkflowId,
  type RegistrationWorkflowInput,
  registrationWorkflowType,
  workflowsSourcePath,
} from '../../src/testing.js';
import type { FakeDistributor } from '../../simulator/distributor.js';
import { typeName } from '../history.js';
import type { Report } from '../report.js';
import type { BenchSettings } from '../settings.js';
import { setupProse } from '../setup-prose.js';
import { devicesFor, insertRegistrations, nextIds, seedUsers } from '../seed.js';
import type { BenchStack } from '../stack.js';
import { benchTemporalConnection } from '../temporal-connection.js';
import { quantile, sleep } from '../stats.js';

/** The reference's `@temporalio/workflow`, as built into dist-tools next to this file's own build. */
const regularActivitiesPath = fileURLToPath(new URL('../workflows/regular-activities.js', import.meta.url));

/**
 * The workflows of workflows/, bundled from source with every `import … from '@temporalio/workflow'`
 * resolved to bench/workflows/regular-activities.ts (which imports the real API by its file, so
 * it is not redirected to itself).
 */
async function regularActivitiesBundle(): Promise<{ code: string }> {
  return bundleWorkflowCode({
    workflowsPath: workflowsSourcePath,
    logger: new DefaultLogger('WARN'),
    webpackConfigHook: (config) => ({
      ...config,
      resolve: { ...config.resolve, alias: { ...config.resolve?.alias, '@temporalio/workflow$': regularActivitiesPath } },
    }),
  });
}

interface KindResult {
  readonly p50: number;
  readonly p95: number;
  readonly events: number;
  /** The event types of the first device's history, in order. */
  readonly history: readonly string[];
}

export async function measureWakePath(stack: BenchStack, report: Report, settings: BenchSettings, distributor: FakeDistributor): Promise<void> {
  const section = report.section('wake-path', 'Wake path: local vs regular activities');
  const connection = await Connection.connect(benchTemporalConnection(stack.temporalEnv));
  const client = new Client({ connection });
  const nativeConnection = await NativeConnection.connect(benchTemporalConnection(stack.temporalEnv));
  const config = loadConfig('worker', { DATABASE_URL: stack.databaseUrl, PUSH_UP_ALLOW_PRIVATE: 'true', PUSH_UP_ALLOW_HTTP: 'true' });
  const log = createLogger({ level: 'silent', name: 'bench' });
  const transports = createTransports(config, log);
  const workerOn = (taskQueue: string, overrides?: Partial<WorkerOptions>) =>
    buildWorker({
      connection: nativeConnection,
      namespace: 'default',
      taskQueue,
      pool: stack.pool,
      log,
      policy: config.wakePolicy,
      transports,
      temporal: client,
      ...(overrides === undefined ? {} : { overrides }),
    });
  const measure = { stack, client, distributor, devices: settings.wakePath.devices };
  let local: KindResult;
  let regular: KindResult;
  try {
    // Ours: the registration workflow as the worker process runs it (the prebuilt bundle).
    local = await whileRunning(await workerOn('bench-wake-path'), () => measureKind({ ...measure, taskQueue: 'bench-wake-path' }));
    // The reference: the same workflow with regular activities, on a worker of its own with the same activities.
    const workflowBundle = await regularActivitiesBundle();
    regular = await whileRunning(await workerOn('bench-wake-path-regular', { workflowBundle }), () =>
      measureKind({ ...measure, taskQueue: 'bench-wake-path-regular' }),
    );
  } finally {
    await transports.close();
    await nativeConnection.close();
    await connection.close();
  }
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
  section.setup.push(setupProse('wake-path', { devices: settings.wakePath.devices }));
  section.details.history = { local: local.history, regular: regular.history };
}

/** `work`'s result while `worker` runs; the worker is shut down after it, also on failure. */
async function whileRunning<T>(worker: Worker, work: () => Promise<T>): Promise<T> {
  const running = worker.run();
  try {
    return await work();
  } finally {
    worker.shutdown();
    await running;
  }
}

/**
 * `devices` fresh devices, one at a time, each with a pending DM row: the signal-with-start of
 * its registration workflow (on `taskQueue`) with the `pending` signal, timed until its wake
 * reaches the fake distributor.
 */
async function measureKind(deps: {
  readonly stack: BenchStack;
  readonly client: Client;
  readonly distributor: FakeDistributor;
  readonly devices: number;
  readonly taskQueue: string;
}): Promise<KindResult> {
  const { stack, client, distributor, taskQueue } = deps;
  const devices = devicesFor(await seedUsers(stack.pool, deps.devices), distributor);
  const registrations = await insertRegistrations(stack.pool, devices);
  const [channelId] = nextIds(1);
  const latencies: number[] = [];
  for (const [i, device] of devices.entries()) {
    await stack.pool.query(sql.unsafe`
      INSERT INTO push_pending (registration_id, channel_id, message_count, first_message_id, first_at, last_message_id, is_dm)
      VALUES (${registrations[i]!}, ${channelId!}, 1, 1, now(), 1, true)`);
    const input: RegistrationWorkflowInput = newRunInput(device, 'unifiedpush');
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
  const events = (await client.workflow.getHandle(registrationWorkflowId(first.userId, first.deviceId)).fetchHistory()).events ?? [];
  return {
    p50: quantile(latencies, 0.5),
    p95: quantile(latencies, 0.95),
    events: events.length,
    history: events.map((e) => typeName(e.eventType)),
  };
}

/**
 * Registration workflows on Temporal's time-skipping test server, with the real activities on
 * a real PostgreSQL and the real transports posting to fakes on loopback: a UnifiedPush
 * distributor, and (with `fcm: true`) Google's OAuth token endpoint and FCM. The worker's
 * outage sharing and recovery loop runs too. Time moves only when a test says so (`skip`), so
 * 15 s and 15 min cost nothing.
 *
 * The helpers do what the other parts of the system do, with the same functions: `message`
 * upserts a pending row and signals as the bridge does, `drain` deletes and signals as the
 * api does.
 */
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime, type Worker } from '@temporalio/worker';
import type { Client } from '@temporalio/client';
import { sql } from 'slonik';
import { inject } from 'vitest';
import { z } from 'zod';
import {
  buildWorker,
  createLogger,
  createTransports,
  customSearchAttributes,
  loadConfig,
  newRunInput,
  registeredSignal,
  type RegistrationWorkflowInput,
  type RegistrationStateView,
  registrationWorkflowId,
  signalDeleted,
  signalDrained,
  signalPending,
  signalRegistered,
  startOutageCoordinator,
  stateQuery,
  type OutageCoordinator,
  type TransportName,
  type Transports,
} from '../../src/testing.js';
import { waitFor } from '../../devstack/daemons.js';
import { workflowTaskInFlight } from '../../devstack/workflow-task.js';
import { temporal } from '@temporalio/proto';
import { freshDatabase, type TestDatabase } from './database.js';
import { createDeviceKeys, startDistributor, type DistributorMessage, type FakeDistributor } from '../../simulator/distributor.js';
import { startFakeFcm, type FakeFcm, type FcmRequestRecord } from '../../devstack/stand-ins/fcm.js';
import { createServiceAccount, startGoogleOAuth, type FakeGoogleOAuth } from '../../devstack/stand-ins/google-oauth.js';
import './provided.js';

export const minIntervalMs = 15_000;
export const rewakeAfterMs = 900_000;
/** A skip never ends closer than this before a workflow timer (see `passTimersAboutToFire`). */
const timerGuardMs = 500;

export interface Device {
  readonly userId: string;
  readonly deviceId: string;
  readonly transport: TransportName;
  /** The UnifiedPush endpoint, or the FCM registration token. */
  readonly endpoint: string;
}

export interface HarnessOptions {
  /** false: workers without a workflow cache (see `start`). */
  readonly cacheWorkflows?: boolean;
  /** Start a fake Google (OAuth token endpoint and FCM) and configure the worker for it. */
  readonly fcm?: boolean;
  /** With `fcm`: false starts the worker without the FCM variables (`restartWorker(h.google.env)` adds them). */
  readonly fcmConfigured?: boolean;
  /** More worker configuration variables, e.g. the FCM budget. */
  readonly env?: Readonly<Record<string, string>>;
}

/** A fake Google: the token endpoint and FCM, and the worker variables that point at them. */
export interface FakeGoogle {
  readonly oauth: FakeGoogleOAuth;
  readonly fcm: FakeFcm;
  readonly env: Readonly<Record<string, string>>;
  close(): Promise<void>;
}

export async function startFakeGoogle(): Promise<FakeGoogle> {
  const account = createServiceAccount('zippchat-test');
  const oauth = await startGoogleOAuth({ account });
  const fcm = await startFakeFcm({ projectId: account.projectId, isAuthorized: (bearer) => oauth.isValid(bearer) });
  return {
    oauth,
    fcm,
    env: { FCM_PROJECT_ID: account.projectId, FCM_CREDENTIALS_JSON: account.keyFile(oauth.url), FCM_ENDPOINT: fcm.url },
    async close() {
      await fcm.close();
      await oauth.close();
    },
  };
}

export class WorkflowHarness {
  private worker: { worker: Worker; running: Promise<void>; health: OutageCoordinator } | undefined;
  private nextUser = 1;
  /** Per device: the run and history length at which its workflow was last seen settled. */
  private readonly settledAt = new Map<string, string>();
  private devices: Device[] = [];
  private nextMessage = 1_000;
  private nextToken = 1;
  /** The test server's time after the last skip: the outage loop's clock never lags behind it. */
  private workflowNow = 0;

  private constructor(
    readonly env: TestWorkflowEnvironment,
    readonly db: TestDatabase,
    public distributor: FakeDistributor,
    public transports: Transports,
    readonly taskQueue: string,
    private readonly maxCachedWorkflows: number,
    readonly google: FakeGoogle | undefined,
    private workerEnv: Readonly<Record<string, string>>,
  ) {}

  /**
   * `cacheWorkflows: false` runs workers without a workflow cache: every task replays the
   * whole history (a determinism check for free), and no task is ever bound to one worker's
   * sticky queue — which the test server never hands back after that worker stops.
   */
  static async start(name: string, options: HarnessOptions = {}): Promise<WorkflowHarness> {
    quietSdkLogs();
    const env = await TestWorkflowEnvironment.createTimeSkipping({
      server: { executable: { type: 'existing-path', path: inject('temporalTestServer') } },
    });
    // The test server knows no custom search attributes until told (the dev stack's
    // `--search-attribute` flags do the same for the CLI server).
    await env.connection.operatorService.addSearchAttributes({
      namespace: env.namespace ?? 'default',
      searchAttributes: Object.fromEntries(
        Object.keys(customSearchAttributes).map((name) => [name, temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD]),
      ),
    });
    const db = await freshDatabase();
    const distributor = await startDistributor();
    const google = options.fcm === true ? await startFakeGoogle() : undefined;
    const fcmEnv = options.fcmConfigured === false ? {} : google?.env;
    const workerEnv = { DATABASE_URL: db.url, PUSH_UP_ALLOW_PRIVATE: 'true', PUSH_UP_ALLOW_HTTP: 'true', ...fcmEnv, ...options.env };
    const harness = new WorkflowHarness(
      env,
      db,
      distributor,
      harnessTransports(workerEnv),
      `${name}-${Date.now()}`,
      options.cacheWorkflows === false ? 0 : 100,
      google,
      workerEnv,
    );
    await harness.startWorker();
    return harness;
  }

  /** The worker's configuration now in force. */
  get config() {
    return loadConfig('worker', this.workerEnv);
  }

  get client(): Client {
    return this.env.client;
  }

  async startWorker(): Promise<void> {
    const log = createLogger({ level: 'silent', name: 'test' });
    const worker = await buildWorker({
      connection: this.env.nativeConnection,
      namespace: this.env.namespace ?? 'default',
      taskQueue: this.taskQueue,
      fromSource: true,
      pool: this.db.pool,
      log,
      policy: { ...this.config.wakePolicy, minIntervalMs, rewakeAfterMs },
      transports: this.transports,
      temporal: this.env.client,
      overrides: { maxCachedWorkflows: this.maxCachedWorkflows, shutdownGraceTime: '2s' },
    });
    // The outage loop as the worker runs it, but one round per skip, right after it (see
    // `skip`): its signals must not race the time-skipping server's timers any more than a
    // test's own signals do.
    const transports = this.transports;
    const health = startOutageCoordinator({
      pool: this.db.pool,
      transports,
      temporal: this.env.client,
      taskQueue: this.taskQueue,
      log,
      intervalMs: 0,
      clock: () => Math.max(transports.clock(), this.workflowNow),
    });
    this.worker = { worker, running: worker.run(), health };
  }

  /** Shuts the worker down (as a deploy would); its workflows wait for the next one. */
  async stopWorker(): Promise<void> {
    if (this.worker === undefined) return;
    this.worker.worker.shutdown();
    await this.worker.running;
    await this.worker.health.stop();
    this.worker = undefined;
  }

  /** Replaces the worker with one configured with these variables too (e.g. the operator fixed FCM). */
  async restartWorker(env: Readonly<Record<string, string>>): Promise<void> {
    await this.stopWorker();
    await this.transports.close();
    this.workerEnv = { ...this.workerEnv, ...env };
    this.transports = harnessTransports(this.workerEnv);
    await this.startWorker();
  }

  /** One round of the worker's outage loop now (every `skip` ends with one). */
  async healthRound(): Promise<void> {
    await this.worker?.health.round();
  }

  /**
   * Between tests: unregister every device of the last test (their workflows end, so no old
   * re-wake keeps the server busy) and start a fresh distributor, so one test's scripted
   * answers never reach another's devices.
   */
  async reset(): Promise<void> {
    const devices = this.devices;
    this.devices = [];
    for (const device of devices) await this.unregister(device);
    // Wait by polling, not with result(): result() lets the test server skip time, and a
    // re-wake timer firing under the stop signal's task is the race settle() describes.
    for (const device of devices) {
      const ended = await waitFor(
        `${device.deviceId} ended`,
        async () => (await this.handle(device).describe()).status.name !== 'RUNNING',
        15_000,
      ).catch(() => false);
      if (!ended) {
        console.warn(`reset: ${device.deviceId} did not end after its registration was deleted; terminating it`);
        await this.handle(device).terminate('test reset: did not end after its registration was deleted');
      }
    }
    await this.distributor.close();
    this.distributor = await startDistributor();
    this.google?.fcm.answerAll(undefined);
    this.google?.oauth.answerAll(undefined);
  }

  async close(): Promise<void> {
    await this.stopWorker();
    await this.transports.close();
    await this.distributor.close();
    await this.google?.close();
    await this.db.drop();
    await this.env.teardown();
  }

  /**
   * A user with a device registered, its workflow started: UnifiedPush with RFC 8291 keys by
   * default (or without, or at a given `endpoint`), or FCM with a fresh token. `earlierStarter`:
   * its run is started as a starter before `beginsUnmarked` started it.
   */
  async registerDevice(
    options: { keys?: boolean; continueAsNewAfterWakes?: number; transport?: TransportName; endpoint?: string; earlierStarter?: boolean } = {},
  ): Promise<Device> {
    const userId = String(this.nextUser++);
    const deviceId = `phone-${userId}`;
    const transport = options.transport ?? 'unifiedpush';
    const keys = options.keys === false || transport === 'fcm' || options.endpoint !== undefined ? undefined : createDeviceKeys();
    const endpoint =
      transport === 'fcm' ? `fcm-token-${this.nextToken++}:APA91b${'x'.repeat(100)}` : (options.endpoint ?? this.distributor.register(keys));
    await this.db.pool.query(sql.unsafe`INSERT INTO users (id, username) VALUES (${userId}, ${`user${userId}`})`);
    await this.db.pool.query(sql.unsafe`
      INSERT INTO push_registrations (user_id, device_id, transport, token, up_p256dh, up_auth)
      VALUES (${userId}, ${deviceId}, ${transport}, ${endpoint},
              ${keys === undefined ? null : sql.binary(keys.p256dh)}, ${keys === undefined ? null : sql.binary(keys.auth)})`);
    const device: Device = { userId, deviceId, transport, endpoint };
    this.devices.push(device);
    if (options.continueAsNewAfterWakes === undefined && options.earlierStarter !== true) {
      await signalRegistered(this.client, this.taskQueue, device, transport);
    } else {
      // As the api starts it, but with a small continue-as-new threshold, or as an earlier api did.
      const today = newRunInput(device, transport);
      const { beginsUnmarked: _onlyToday, ...earlier } = today;
      const input: RegistrationWorkflowInput = {
        ...(options.earlierStarter === true ? earlier : today),
        ...(options.continueAsNewAfterWakes === undefined ? {} : { continueAsNewAfterWakes: options.continueAsNewAfterWakes }),
      };
      await this.client.workflow.signalWithStart('registrationWorkflow', {
        taskQueue: this.taskQueue,
        workflowId: registrationWorkflowId(userId, deviceId),
        args: [input],
        signal: registeredSignal,
        signalArgs: [{ transport }],
      });
    }
    return device;
  }

  /** A message for `device` in `channelId`, as the bridge records and signals it. */
  async message(device: Device, channelId: number, isDm = false, options: { signal?: boolean } = {}): Promise<void> {
    const messageId = this.nextMessage++;
    const created = await this.db.pool.maybeOneFirst(sql.type(z.object({ created: z.boolean() }))`
      INSERT INTO push_pending (registration_id, channel_id, message_count, first_message_id, first_at, last_message_id, is_dm)
      SELECT id, ${channelId}, 1, ${messageId}, now(), ${messageId}, ${isDm}
      FROM push_registrations WHERE user_id = ${device.userId} AND device_id = ${device.deviceId}
      ON CONFLICT (registration_id, channel_id) DO UPDATE
        SET message_count = push_pending.message_count + 1, last_message_id = excluded.last_message_id, last_at = now()
      RETURNING (xmax = 0) AS created`);
    if (created === true && options.signal !== false) await signalPending(this.client, this.taskQueue, device, device.transport);
  }

  /**
   * The device drains, as `POST /api/push/drain` does (it tells Temporal nothing). `signal: true`
   * also sends the `drained` signal earlier api versions sent, which workflows now ignore.
   */
  async drain(device: Device, options: { signal?: boolean } = {}): Promise<number> {
    const drained = await this.db.pool.transaction(async (tx) => {
      const rows = await tx.any(sql.unsafe`
        DELETE FROM push_pending p USING push_registrations r
        WHERE p.registration_id = r.id AND r.user_id = ${device.userId} AND r.device_id = ${device.deviceId}
        RETURNING p.channel_id`);
      await tx.query(sql.unsafe`
        UPDATE push_registrations SET wake_outstanding = false WHERE user_id = ${device.userId} AND device_id = ${device.deviceId}`);
      return rows.length;
    });
    if (options.signal === true) await signalDrained(this.client, device);
    return drained;
  }

  /** Deletes the registration, as `DELETE /api/push/registration` does. */
  async unregister(device: Device): Promise<void> {
    await this.db.pool.query(sql.unsafe`DELETE FROM push_registrations WHERE user_id = ${device.userId} AND device_id = ${device.deviceId}`);
    await signalDeleted(this.client, device);
  }

  /** Every request the provider received for `device` (UnifiedPush: checked wakes, whatever the answer). */
  wakes(device: Device): Array<DistributorMessage | FcmRequestRecord> {
    if (device.transport === 'fcm') return (this.google?.fcm.received ?? []).filter((r) => r.token === device.endpoint);
    return this.distributor.received.filter((m) => m.endpoint === device.endpoint);
  }

  /** The requests for `device` the provider accepted (2xx). */
  delivered(device: Device): Array<DistributorMessage | FcmRequestRecord> {
    return this.wakes(device).filter((r) => r.answered !== undefined && r.answered >= 200 && r.answered < 300);
  }

  /** Waits (in real time, the workflow clock stands still) until `device` has had `count` wakes. */
  async untilWakes(device: Device, count: number): Promise<DistributorMessage[]> {
    await waitFor(`${count} wake(s) for ${device.deviceId}`, async () => this.wakes(device).length >= count, 20_000);
    return this.wakes(device) as DistributorMessage[];
  }

  /** Waits (real time) until `device` has had `count` wakes accepted by its provider. */
  async untilDelivered(device: Device, count: number): Promise<void> {
    await waitFor(`${count} delivered wake(s) for ${device.deviceId}`, async () => this.delivered(device).length >= count, 20_000);
  }

  /**
   * Lets workflow time pass; returns once the workflows have caught up with it and no timer of
   * theirs is about to fire (see `settle` for why both matter).
   */
  async skip(ms: number): Promise<void> {
    await this.settle();
    await this.env.sleep(ms);
    this.workflowNow = await this.env.currentTimeMs();
    await this.passTimersAboutToFire();
    await this.healthRound();
  }

  /**
   * Skips to a moment of workflow time (epoch ms). For "just before a timer" checks: the
   * server's clock also runs at real pace between skips, so a fixed-length skip measured from
   * an earlier moment has a margin that shrinks on a slow machine; a target does not.
   */
  async skipTo(atMs: number): Promise<void> {
    await this.skip(Math.max(0, atMs - (await this.env.currentTimeMs())));
  }

  /**
   * Waits until no workflow task of this test's devices is in flight. The time-skipping server
   * refuses a workflow task that cancels a timer which fired while the task was with the
   * worker ("invalid history builder state for action"; a real server takes it) and strands
   * the run: every retry of the task is refused again. Skipping time under a task in flight
   * provokes exactly that; so skips wait. Returns the devices whose workflows still run.
   */
  async settle(): Promise<Device[]> {
    const running: Device[] = [];
    for (const device of this.devices) {
      const status = await waitFor(
        `${device.deviceId} settled (a workflow task that never completes: a stranded run, which also stops time skipping)`,
        async () => {
          const { status, runId, historyLength } = await this.handle(device).describe();
          if (status.name !== 'RUNNING' || this.worker === undefined) return status.name;
          // No event since it was last seen settled: still settled (a task adds events).
          const seen = `${runId}:${historyLength}`;
          if (this.settledAt.get(device.deviceId) === seen) return status.name;
          if (await workflowTaskInFlight(this.handle(device))) return undefined;
          this.settledAt.set(device.deviceId, seen);
          return status.name;
        },
        20_000,
        // A task takes milliseconds; every skip and every signal waits for one.
        10,
      );
      if (status === 'RUNNING') running.push(device);
    }
    return running;
  }

  /**
   * The other half of the race `settle` describes. Between skips the server's clock runs at
   * real pace, and a skip of a whole interval lands a few milliseconds before the timer a task
   * armed at the previous landing (the timer starts when the task completes, a little after
   * the task's own time). A signal the test sends next would then be handled while that timer
   * fires — on a loaded machine, reliably. So a skip goes on past any timer due within the
   * guard. (Timers of local-activity retries are the SDK's and not seen here.)
   */
  private async passTimersAboutToFire(): Promise<void> {
    if (this.worker === undefined) return; // no worker: no task can race, and no query answers
    for (let round = 0; round < 10; round++) {
      const running = await this.settle();
      const now = await this.env.currentTimeMs();
      const due: number[] = [];
      for (const device of running) {
        const timers = await this.state(device).then(
          (state) => [state.nextTimer?.at, state.rewakeAlarm ?? undefined].filter((at): at is string => at !== undefined).map((at) => Date.parse(at)),
          () => [],
        );
        // A time long past is no timer about to fire (the workflow is busy, e.g. in a retry).
        for (const at of timers) if (at > now - timerGuardMs && at <= now + timerGuardMs) due.push(at);
      }
      if (due.length === 0) return;
      await this.env.sleep(Math.max(0, Math.max(...due) - now) + timerGuardMs);
    }
    throw new Error('timers kept falling due right after each skip');
  }

  /**
   * Lets workflow time pass in steps, settled between them, until the device's workflow has
   * ended; returns its result. (`handle.result()` would let the test server skip time on its
   * own, under tasks in flight — see `settle`.)
   */
  async finish(device: Device, options: { stepMs?: number; maxSteps?: number } = {}): Promise<unknown> {
    for (let step = 0; step <= (options.maxSteps ?? 200); step++) {
      await this.settle();
      if ((await this.handle(device).describe()).status.name !== 'RUNNING') return this.handle(device).result();
      await this.env.sleep(options.stepMs ?? 30_000);
    }
    throw new Error(`${device.deviceId}: the workflow did not end`);
  }

  handle(device: Device) {
    return this.client.workflow.getHandle(registrationWorkflowId(device.userId, device.deviceId));
  }

  async state(device: Device): Promise<RegistrationStateView> {
    return this.handle(device).query(stateQuery);
  }

  /** Waits until the workflow's own view satisfies `predicate` (settles activities in flight). */
  async until(device: Device, what: string, predicate: (state: RegistrationStateView) => boolean): Promise<RegistrationStateView> {
    return waitFor(
      what,
      async () => {
        const state = await this.state(device);
        return predicate(state) ? state : undefined;
      },
      20_000,
    );
  }

  async row(device: Device) {
    return this.db.pool.maybeOne(sql.type(registrationRow)`
      SELECT id, wake_outstanding, last_woken_at, failures, backoff_until, backoff_count, backoff_origin, fcm_budget_tat
      FROM push_registrations WHERE user_id = ${device.userId} AND device_id = ${device.deviceId}`);
  }

  /** Registrations of this test still in PostgreSQL. */
  async kept(devices: readonly Device[]): Promise<number> {
    let kept = 0;
    for (const device of devices) if ((await this.row(device)) !== null) kept++;
    return kept;
  }
}

const registrationRow = z.object({
  id: z.string(),
  wake_outstanding: z.boolean(),
  last_woken_at: z.date().nullable(),
  failures: z.number(),
  backoff_until: z.date().nullable(),
  backoff_count: z.number(),
  backoff_origin: z.string().nullable(),
  fcm_budget_tat: z.date().nullable(),
});

function harnessTransports(env: Readonly<Record<string, string>>): Transports {
  return createTransports(loadConfig('worker', env), createLogger({ level: 'silent', name: 'test' }), {
    unifiedPushDeadlineMs: 2_000,
    fcmDeadlineMs: 2_000,
  });
}

let runtimeInstalled = false;
/** The SDK logs every retried activity failure at WARN; the tests provoke hundreds on purpose. */
function quietSdkLogs(): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  Runtime.install({ logger: new DefaultLogger('ERROR') });
}

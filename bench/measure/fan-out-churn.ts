/**
 * Fan-out under churn: a server channel's messages while a fifth of its members log out and
 * back in, through the real processes (api, bridge, worker) and the fake distributor. On a
 * real instance registrations change all day — every app start re-registers, people log out,
 * sessions are revoked — and nothing may fail because of it: a registration deleted while the
 * bridge records a message is skipped, not fatal to the channel's events.
 *
 * Two channels of the same size, each its own server: the reference is the same messages with
 * nobody churning, measured in the same run. Per channel, every member registered at the end
 * is owed a wake by the first message published after their (re-)registration; the wake
 * latency is that message's publish → the first wake the distributor receives on the member's
 * endpoint (each device is woken once: nobody drains, so later messages coalesce). Failed event
 * deliveries are the bridge's `push_bridge_events_total{outcome="failed"}`.
 */
import { jetstream } from '@nats-io/jetstream';
import { sql } from 'slonik';
import { settleAll } from '../../src/testing.js';
import type { DistributorMessage } from '../../simulator/distributor.js';
import { withApi, type ApiDevice } from '../devices.js';
import type { DistributorTap } from '../distributor-tap.js';
import type { Report } from '../report.js';
import type { BenchSettings } from '../settings.js';
import { setupProse } from '../setup-prose.js';
import { insertRegistrations, messageEvent, seedServer, type ServerWorld } from '../seed.js';
import type { BenchStack, RunningApps } from '../stack.js';
import { quantile, sleep } from '../stats.js';

export interface ChurnRun {
  readonly members: number;
  readonly churned: number;
  /** Deliveries of the channel's events that failed (each is redelivered). */
  readonly failedEvents: number | null;
  /** Per member registered at the end and woken: owed message's publish → first wake, ms. */
  readonly latenciesMs: number[];
  /** Members registered at the end not woken by the deadline. */
  readonly unwoken: number;
}

export async function measureFanOutChurn(stack: BenchStack, report: Report, settings: BenchSettings, tap: DistributorTap): Promise<void> {
  const section = report.section('fan-out-churn', '1–3 with churn: fan-out while members log out and back in', 'fan-out-churn');
  const { members, churnShare, messages, messageEveryMs, concurrency, deadlineMs } = settings.fanOutChurn;
  const churning = Math.round(members * churnShare);
  section.setup.push(
    setupProse('fan-out-churn', {
      members: members.toLocaleString('en-US'),
      messages,
      messageEveryMs,
      churning: churning.toLocaleString('en-US'),
      churnPercent: Math.round(churnShare * 100),
      concurrency,
      deadlineSeconds: Math.round(deadlineMs / 1000),
    }),
  );
  const quietWorld = await seededWorld(stack, tap, members);
  const churnWorld = await seededWorld(stack, tap, members);
  let apps: RunningApps | undefined;
  try {
    apps = await stack.startApps({ label: 'fanout-churn', taskQueue: 'bench-fanout-churn', apps: ['api', 'worker', 'bridge'] });
    const running = apps;
    process.stdout.write(`  ${members} members, nobody churning…`);
    const quiet = await runChannel(stack, running, tap, quietWorld, [], settings);
    process.stdout.write(` ${describe(quiet)}; ${churning} logging out and in…`);
    const devices = await withApi(churnWorld.devices.slice(0, churning), running.apiUrl, stack.jwtSecret);
    const churn = await runChannel(stack, running, tap, churnWorld, devices, settings);
    process.stdout.write(` ${describe(churn)}\n`);
    const n = members.toLocaleString('en-US');
    const p = (run: ChurnRun, q: number) => (run.latenciesMs.length === 0 ? null : quantile(run.latenciesMs, q) / 1000);
    report.figure(section, {
      name: `${n} members, ${churning} logging out and in: event deliveries failed`,
      value: churn.failedEvents,
      unit: 'deliveries',
      reference: { name: 'nobody churning', value: quiet.failedEvents },
      headline: '1. fan-out with churn: failed deliveries',
    });
    report.figure(section, {
      name: `${n} members, ${churning} logging out and in: members registered at the end not woken by the deadline`,
      value: churn.unwoken,
      unit: 'members',
      reference: { name: 'nobody churning', value: quiet.unwoken },
    });
    for (const [label, q] of [
      ['p50', 0.5],
      ['p99', 0.99],
      ['max', 1],
    ] as const) {
      report.figure(section, {
        name: `${n} members, ${churning} logging out and in: owed message → wake, ${label}`,
        value: p(churn, q),
        unit: 's',
        reference: { name: 'nobody churning', value: p(quiet, q) },
        ...(label === 'p99' ? { headline: '1. fan-out with churn: wake latency p99' } : {}),
      });
    }
    section.details.runs = [quiet, churn].map((run) => ({
      members: run.members,
      churned: run.churned,
      failedEvents: run.failedEvents,
      unwoken: run.unwoken,
      woken: run.latenciesMs.length,
      p50Ms: run.latenciesMs.length === 0 ? null : quantile(run.latenciesMs, 0.5),
      p99Ms: run.latenciesMs.length === 0 ? null : quantile(run.latenciesMs, 0.99),
      maxMs: run.latenciesMs.length === 0 ? null : Math.max(...run.latenciesMs),
    }));
  } finally {
    await apps?.stop();
  }
}

async function seededWorld(stack: BenchStack, tap: DistributorTap, members: number): Promise<ServerWorld> {
  const world = await seedServer(stack.pool, { members, channels: 1, distributor: tap.distributor });
  await insertRegistrations(stack.pool, world.devices);
  return world;
}

/** The channel's messages while `churning` log out and back in; see the module comment. */
async function runChannel(
  stack: BenchStack,
  apps: RunningApps,
  tap: DistributorTap,
  world: ServerWorld,
  churning: readonly ApiDevice[],
  settings: BenchSettings,
): Promise<ChurnRun> {
  const { messages, messageEveryMs, concurrency, deadlineMs } = settings.fanOutChurn;
  const channel = world.channelIds[0]!;
  // Endpoint → when it was registered (ms; the seeded ones before the first message).
  const registeredAt = new Map(world.devices.map((d) => [d.endpoint, 0]));
  const firstWake = new Map<string, number>();
  tap.listen((message: DistributorMessage) => {
    if (registeredAt.has(message.endpoint) && !firstWake.has(message.endpoint)) firstWake.set(message.endpoint, Date.now());
  });
  const failedBefore = await failedDeliveries(apps);
  const published: number[] = [];
  const say = async () => {
    const event = messageEvent(channel, world.ownerId);
    published.push(Date.now());
    await jetstream(stack.nats).publish(`channel.${channel}.MESSAGE_CREATE`, event.body, { msgID: `message-${event.id}` });
  };
  try {
    const started = Date.now();
    const span = messages * messageEveryMs;
    const churn = settleAll(churning, concurrency, async (device) => {
      const index = churning.indexOf(device);
      await sleep(Math.max(0, started + (index * span) / churning.length - Date.now()));
      await logOutAndIn(stack, tap, device, registeredAt);
    });
    const talk = (async () => {
      for (let i = 0; i < messages; i++) {
        await say();
        await sleep(Math.max(0, started + (i + 1) * messageEveryMs - Date.now()));
      }
    })();
    const [failures] = await Promise.all([churn, talk]);
    if (failures.length > 0) throw new Error(`${failures.length} of ${churning.length} log-outs and log-ins failed: ${String(failures[0])}`);
    await say();
    const owed = () => [...registeredAt].map(([endpoint, at]) => ({ endpoint, message: published.find((t) => t >= at)! }));
    const deadline = Date.now() + deadlineMs;
    while (Date.now() < deadline && owed().some(({ endpoint }) => !firstWake.has(endpoint))) await sleep(100);
    const latenciesMs = owed().flatMap(({ endpoint, message }) => {
      const wake = firstWake.get(endpoint);
      return wake === undefined ? [] : [Math.max(0, wake - message)];
    });
    await sleep(1_000); // the bridge's last acknowledgements reach its metrics
    const failedAfter = await failedDeliveries(apps);
    return {
      members: world.devices.length,
      churned: churning.length,
      failedEvents: failedBefore === null || failedAfter === null ? null : failedAfter - failedBefore,
      latenciesMs: latenciesMs.sort((a, b) => a - b),
      unwoken: registeredAt.size - latenciesMs.length,
    };
  } finally {
    tap.listen(undefined);
  }
}

/** The host revokes the session, the app unregisters; then a new session and a new endpoint. */
async function logOutAndIn(stack: BenchStack, tap: DistributorTap, device: ApiDevice, registeredAt: Map<string, number>): Promise<void> {
  await stack.pool.query(sql.unsafe`
    UPDATE refresh_tokens SET revoked_at = now() WHERE user_id = ${device.userId} AND device_id = ${device.deviceId} AND revoked_at IS NULL`);
  registeredAt.delete(device.endpoint);
  await device.api.unregister();
  await stack.pool.query(sql.unsafe`
    INSERT INTO refresh_tokens (user_id, device_id, expires_at) VALUES (${device.userId}, ${device.deviceId}, now() + interval '30 days')`);
  const endpoint = tap.distributor.register(device.keys);
  await device.api.register({
    transport: 'unifiedpush',
    token: endpoint,
    p256dh: device.keys.p256dh.toString('base64url'),
    auth: device.keys.auth.toString('base64url'),
  });
  registeredAt.set(endpoint, Date.now());
}

/** The bridge's failed deliveries so far, from its /metrics. */
async function failedDeliveries(apps: RunningApps): Promise<number | null> {
  const text = await (await fetch(apps.bridgeMetricsUrl)).text().catch(() => '');
  const line = text.split('\n').find((l) => l.startsWith('push_bridge_events_total{') && l.includes('outcome="failed"'));
  if (line === undefined) return text === '' ? null : 0;
  return Number(line.trim().split(/\s+/).at(-1));
}

function describe(run: ChurnRun): string {
  const p99 = run.latenciesMs.length === 0 ? '–' : (quantile(run.latenciesMs, 0.99) / 1000).toFixed(1);
  return `${run.failedEvents ?? '?'} failed deliveries, ${run.latenciesMs.length} woken (p99 ${p99} s), ${run.unwoken} not`;
}

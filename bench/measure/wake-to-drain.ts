/**
 * The end to end as the phones see it: devices registered through the real api, woken by the
 * real bridge and worker through the fake distributor, drain the moment a wake arrives, as the
 * app does. For each wake they note its arrival and the drain's answer; for each drained row,
 * its first message's `created_at`. Rounds of one DM to every device (HIGH), then one message in
 * their server's channel (NORMAL). Reported per priority: message → drain and wake → drain, next
 * to message → wake measured by the same phones, and the api's own figures for the same drains
 * (push_wake_to_drain_seconds, push_message_to_drain_seconds), read from its /metrics.
 */
import { jetstream } from '@nats-io/jetstream';
import { sql } from 'slonik';
import { settleAll, type WakePriority } from '../../src/testing.js';
import { registerAll, withApi, type ApiDevice } from '../devices.js';
import type { DistributorTap } from '../distributor-tap.js';
import type { Report } from '../report.js';
import type { BenchSettings } from '../settings.js';
import { setupProse } from '../setup-prose.js';
import { messageEvent, nextIds, seedServer, type ServerWorld } from '../seed.js';
import type { BenchStack } from '../stack.js';
import { mean, quantile, sleep } from '../stats.js';

/** Short enough that rounds follow each other quickly; each round's message still comes after it. */
const minIntervalMs = 2_000;

interface Samples {
  readonly messageToWake: number[];
  readonly messageToDrain: number[];
  readonly wakeToDrain: number[];
}

export async function measureWakeToDrain(stack: BenchStack, report: Report, settings: BenchSettings, tap: DistributorTap): Promise<void> {
  const section = report.section('wake-to-drain', 'Message → drain and wake → drain, as the phones see them');
  const { devices: count, rounds } = settings.wakeToDrain;
  const world = await seedServer(stack.pool, { members: count, channels: 1, distributor: tap.distributor });
  const dms = await seedDms(stack, world);
  const env = { PUSH_MIN_INTERVAL_MS: String(minIntervalMs) };
  const apps = await stack.startApps({ label: 'drain', taskQueue: 'bench-drain', apps: ['api', 'worker', 'bridge'], env });
  const samples: Record<WakePriority, Samples> = { high: empty(), normal: empty() };
  const drained = new Map<string, Set<string>>();
  const inFlight = new Set<Promise<void>>();
  let metrics: string;
  let drainFailures = 0;
  try {
    const devices = await withApi(world.devices, apps.apiUrl, stack.jwtSecret);
    await registerAll(devices);
    const byEndpoint = new Map(devices.map((d) => [d.endpoint, d]));
    tap.listen((message) => {
      const device = byEndpoint.get(message.endpoint);
      if (device === undefined) return;
      const drain = drainNow(device, Date.now(), samples, drained).catch(() => void drainFailures++);
      inFlight.add(drain);
      void drain.finally(() => inFlight.delete(drain));
    });
    for (let round = 0; round < rounds; round++) {
      for (const priority of ['high', 'normal'] as const) {
        const ids = await publishRound(stack, world, dms, priority);
        await everyDrained(devices, ids, drained, 60_000);
        await sleep(minIntervalMs + 500); // the next round's message comes after the interval
      }
    }
    await Promise.allSettled([...inFlight]);
    metrics = await (await fetch(`${apps.apiUrl}/metrics`)).text();
  } finally {
    tap.listen(undefined);
    await Promise.allSettled([...inFlight]);
    await apps.stop();
  }
  reportFigures(report, section, samples, metrics);
  if (drainFailures > 0) section.details['drainFailures'] = drainFailures;
  section.setup.push(setupProse('wake-to-drain', { devices: count, rounds, minIntervalMs }));
}

const empty = (): Samples => ({ messageToWake: [], messageToDrain: [], wakeToDrain: [] });

/** A DM channel between the server's owner and each member. */
async function seedDms(stack: BenchStack, world: ServerWorld): Promise<Map<string, string>> {
  const members = world.devices.map((d) => d.userId);
  const channelIds = nextIds(members.length);
  const channels = sql.array(channelIds, 'int8');
  await stack.pool.query(sql.unsafe`INSERT INTO channels (id, server_id, type) SELECT id, NULL, 'dm' FROM unnest(${channels}) AS id`);
  await stack.pool.query(sql.unsafe`
    INSERT INTO channel_members (channel_id, user_id)
    SELECT c, u FROM unnest(${channels}, ${sql.array(members, 'int8')}) AS t(c, u)
    UNION ALL SELECT c, ${world.ownerId}::int8 FROM unnest(${channels}) AS c`);
  return new Map(members.map((m, i) => [m, channelIds[i]!]));
}

/** Drains as the app does on a wake, and notes what it took. */
async function drainNow(
  device: ApiDevice,
  arrivedAt: number,
  samples: Record<WakePriority, Samples>,
  drained: Map<string, Set<string>>,
): Promise<void> {
  const items = await device.api.drain();
  const doneAt = Date.now();
  const seen = drained.get(device.userId) ?? new Set<string>();
  drained.set(device.userId, seen);
  const priority: WakePriority = items.some((item) => item.is_dm) ? 'high' : 'normal';
  samples[priority].wakeToDrain.push(doneAt - arrivedAt);
  for (const item of items) {
    const s = samples[item.is_dm ? 'high' : 'normal'];
    s.messageToDrain.push(doneAt - Date.parse(item.first_at));
    s.messageToWake.push(arrivedAt - Date.parse(item.first_at));
    seen.add(item.first_message_id);
  }
}

/** One message to every device: a DM each (high), or one in their channel (normal). Returns the message ids. */
async function publishRound(stack: BenchStack, world: ServerWorld, dms: Map<string, string>, priority: WakePriority): Promise<string[]> {
  const js = jetstream(stack.nats);
  const channels = priority === 'high' ? [...dms.values()] : [world.channelIds[0]!];
  const ids: string[] = [];
  const failures = await settleAll(channels, 16, async (channelId) => {
    const message = messageEvent(channelId, world.ownerId);
    ids.push(message.id);
    await js.publish(`channel.${channelId}.MESSAGE_CREATE`, message.body, { msgID: `message-${message.id}`, timeout: 15_000 });
  });
  if (failures.length > 0) throw new Error(`${failures.length} publishes failed: ${String(failures[0])}`);
  return ids;
}

/** Until every device drained one of `ids` (its DM, or the channel's message). */
async function everyDrained(
  devices: readonly ApiDevice[],
  ids: readonly string[],
  drained: Map<string, Set<string>>,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const done = (d: ApiDevice) => ids.some((id) => drained.get(d.userId)?.has(id) === true);
  while (!devices.every(done)) {
    if (Date.now() > deadline) throw new Error(`${devices.filter((d) => !done(d)).length} devices did not drain within ${timeoutMs} ms`);
    await sleep(50);
  }
}

/** The mean of a histogram of the api's /metrics for the series with these labels (seconds), or null. */
function histogramMean(metrics: string, name: string, labels: readonly string[]): number | null {
  const value = (suffix: string) => {
    const line = metrics.split('\n').find((l) => l.startsWith(`${name}_${suffix}{`) && labels.every((label) => l.includes(label)));
    return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
  };
  const total = value('sum');
  const n = value('count');
  return total === undefined || n === undefined || n === 0 ? null : total / n;
}

function reportFigures(report: Report, section: ReturnType<Report['section']>, samples: Record<WakePriority, Samples>, metrics: string): void {
  for (const priority of ['high', 'normal'] as const) {
    const s = samples[priority];
    const what = priority === 'high' ? 'DM (HIGH)' : 'server channel (NORMAL)';
    const labels = [`priority="${priority}"`, 'transport="unifiedpush"'];
    const apiMs = (name: string) => {
      const seconds = histogramMean(metrics, name, labels);
      return seconds === null ? null : seconds * 1000;
    };
    for (const q of [0.5, 0.95]) {
      report.figure(section, {
        name: `${what}: message → drain p${q * 100}, phones`,
        value: quantile(s.messageToDrain, q),
        unit: 'ms',
        reference: { name: `message → wake p${q * 100}, the same phones`, value: quantile(s.messageToWake, q) },
        note: `${s.messageToDrain.length} messages`,
        ...(priority === 'high' && q === 0.5 ? { headline: 'end to end' } : {}),
      });
    }
    report.figure(section, {
      name: `${what}: wake → drain mean, phones (the wake's arrival to the drain's answer)`,
      value: mean(s.wakeToDrain),
      unit: 'ms',
      reference: { name: "the api's push_wake_to_drain_seconds mean (the wake's claim to the drain)", value: apiMs('push_wake_to_drain_seconds') },
      note: `${s.wakeToDrain.length} wakes; p95 ${quantile(s.wakeToDrain, 0.95)} ms`,
    });
    report.figure(section, {
      name: `${what}: message → drain mean, phones`,
      value: mean(s.messageToDrain),
      unit: 'ms',
      reference: { name: "the api's push_message_to_drain_seconds mean", value: apiMs('push_message_to_drain_seconds') },
    });
  }
}

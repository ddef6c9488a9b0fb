/**
 * `POST /api/push/drain` under many concurrent devices: the real api process
 * (authentication, per-user rate limit, the drain transaction, metrics; it tells Temporal
 * nothing: the workflow learns of the drain from its next claim) against a bare Koa handler running the same SQL
 * (bench/children/bare-drain.ts). Same client, same devices, same pending rows each round.
 * The cost of the shared per-user rate limit alone: the bare handler with and without it.
 */
import { sql } from 'slonik';
import { Agent, request } from 'undici';
import type { Report } from '../report.js';
import type { BenchSettings } from '../settings.js';
import { setupProse } from '../setup-prose.js';
import { forkHelper, type Helper } from '../children/ipc.js';
import { registerAll, settledHistoryLengths, withApi, type ApiDevice } from '../devices.js';
import type { DistributorTap } from '../distributor-tap.js';
import { nextMessageId, seedServer } from '../seed.js';
import type { BenchStack, RunningApps } from '../stack.js';
import { quantile } from '../stats.js';
import { lineChart } from '../svg.js';
import { settleAll } from '../../src/testing.js';

interface Burst {
  readonly latencies: number[];
  readonly seconds: number;
}

export async function measureDrainApi(stack: BenchStack, report: Report, settings: BenchSettings, tap: DistributorTap): Promise<void> {
  const section = report.section('drain-api', '7. The drain API');
  const { devices: count, concurrency, rounds, channelsPerDevice } = settings.drainApi;
  const world = await seedServer(stack.pool, { members: count, channels: channelsPerDevice, distributor: tap.distributor });
  let apps: RunningApps | undefined;
  let bare: Helper | undefined;
  let limited: Helper | undefined;
  let syncs: { before: SyncTotals; after: SyncTotals } | undefined;
  const agent = new Agent({ connections: concurrency, pipelining: 1 });
  const ours: Burst[] = [];
  const reference: Burst[] = [];
  const bareLimited: Burst[] = [];
  try {
    // The bridge's signaller starts the workflows the api's registrations owe, as in production.
    apps = await stack.startApps({ label: 'drain', taskQueue: 'bench-drain', apps: ['api', 'worker', 'bridge'] });
    bare = forkHelper(stack.dir, 'bare-drain');
    const bareUrl = await bare.call<string>('start', { databaseUrl: stack.databaseUrl });
    limited = forkHelper(stack.dir, 'bare-drain');
    const limitedUrl = await limited.call<string>('start', { databaseUrl: stack.databaseUrl, rateLimit: true });
    const { apiUrl } = apps;
    const devices = await withApi(world.devices, apps.apiUrl, stack.jwtSecret);
    await registerAll(devices);
    await settledHistoryLengths(
      stack.temporal,
      devices.map((d) => d.workflowId),
    );
    const fill = () => fillPending(stack, world.channelIds);
    const bareUrls = { bare: bareUrl, 'bare-limited': limitedUrl };
    const drainVia =
      (target: 'api' | keyof typeof bareUrls) =>
      (d: ApiDevice): { url: string; headers: Record<string, string> } =>
        target === 'api'
          ? { url: `${apiUrl}/api/push/drain`, headers: { authorization: `Bearer ${d.jwt}` } }
          : { url: `${bareUrls[target]}/drain`, headers: { 'x-user-id': d.userId, 'x-device-id': d.deviceId } };
    const collected = { api: ours, bare: reference, 'bare-limited': bareLimited };
    const before = await syncTotals(apiUrl);
    // One warm-up burst each, not counted; then alternate so drift hits all alike.
    for (let round = 0; round <= rounds; round++) {
      for (const target of ['api', 'bare', 'bare-limited'] as const) {
        await fill();
        const burst = await drainBurst(agent, devices, concurrency, channelsPerDevice, drainVia(target));
        if (round > 0) collected[target].push(burst);
      }
    }
    syncs = { before, after: await syncTotals(apiUrl) };
  } finally {
    await agent.close();
    await bare?.stop();
    await limited?.stop();
    await apps?.stop();
  }
  const all = (bursts: Burst[]) => bursts.flatMap((b) => b.latencies);
  const rate = (bursts: Burst[]) => all(bursts).length / bursts.reduce((a, b) => a + b.seconds, 0);
  const bareName = 'bare Koa handler, same SQL';
  report.figure(section, {
    name: 'drains per second',
    value: rate(ours),
    unit: '/s',
    reference: { name: bareName, value: rate(reference) },
    headline: '7. drain API',
  });
  report.figure(section, {
    name: 'latency p50',
    value: quantile(all(ours), 0.5),
    unit: 'ms',
    reference: { name: bareName, value: quantile(all(reference), 0.5) },
    headline: '7. drain API',
  });
  report.figure(section, {
    name: 'latency p99',
    value: quantile(all(ours), 0.99),
    unit: 'ms',
    reference: { name: bareName, value: quantile(all(reference), 0.99) },
    headline: '7. drain API',
  });
  // The shared per-user rate limit alone: the bare handler with it vs without.
  report.figure(section, {
    name: 'bare handler + shared rate limit: drains per second',
    value: rate(bareLimited),
    unit: '/s',
    reference: { name: bareName, value: rate(reference) },
  });
  report.figure(section, {
    name: 'bare handler + shared rate limit: latency p50',
    value: quantile(all(bareLimited), 0.5),
    unit: 'ms',
    reference: { name: bareName, value: quantile(all(reference), 0.5) },
  });
  report.figure(section, {
    name: 'api (everything): drains per second',
    value: rate(ours),
    unit: '/s',
    reference: { name: 'bare handler + shared rate limit', value: rate(bareLimited) },
  });
  if (syncs !== undefined) {
    const drains = (rounds + 1) * count; // the api's warm-up burst counts too
    const statements = syncs.after.count - syncs.before.count;
    report.figure(section, { name: 'api: rate-limit synchronisations per 1,000 drains', value: (1000 * statements) / drains, unit: '' });
    report.figure(section, {
      name: 'api: rate-limit synchronisation time per drain',
      value: (1000 * (syncs.after.seconds - syncs.before.seconds)) / drains,
      unit: 'ms',
    });
    report.figure(section, { name: 'api: requests that waited for a synchronisation', value: syncs.after.waits - syncs.before.waits, unit: '' });
  }
  const cdf = (values: number[]) => [...values].sort((a, b) => a - b).map((v, i, s) => [v, (i + 1) / s.length] as const);
  report.plot(
    section,
    'drain-latency.svg',
    'Drain latency distribution (CDF): the api vs a bare Koa handler running the same SQL',
    lineChart({
      title: `POST /api/push/drain, ${concurrency} concurrent devices: latency CDF`,
      xLabel: 'latency (ms, log scale)',
      yLabel: 'fraction of requests',
      xLog: true,
      series: [
        { name: 'ours: the api process', points: cdf(all(ours)) },
        { name: 'bare Koa handler, same SQL', points: cdf(all(reference)), dashed: true },
      ],
    }),
  );
  section.setup.push(setupProse('drain-api', { devices: count, channelsPerDevice, rounds, concurrency }));
  const burstsOf = (bursts: Burst[]) => bursts.map((b) => ({ requests: b.latencies.length, seconds: b.seconds }));
  section.details.bursts = {
    ours: burstsOf(ours),
    reference: burstsOf(reference),
    bareWithRateLimit: burstsOf(bareLimited),
  };
  section.details.rateLimitSyncs = syncs;
}

/** Every registration of the world gets one pending row per channel, and an outstanding wake. */
async function fillPending(stack: BenchStack, channelIds: readonly string[]): Promise<void> {
  const messageId = nextMessageId();
  await stack.pool.query(sql.unsafe`
    INSERT INTO push_pending (registration_id, channel_id, message_count, first_message_id, first_at, last_message_id, is_dm)
    SELECT r.id, c.id, 3, ${messageId}, now(), ${messageId}, false
    FROM push_registrations r
    JOIN server_members sm ON sm.user_id = r.user_id
    JOIN channels c ON c.server_id = sm.server_id
    WHERE c.id = ANY(${sql.array(channelIds, 'int8')})
    ON CONFLICT DO NOTHING`);
  await stack.pool.query(sql.unsafe`
    UPDATE push_registrations r SET wake_outstanding = true
    WHERE EXISTS (SELECT 1 FROM push_pending p WHERE p.registration_id = r.id AND p.channel_id = ANY(${sql.array(channelIds, 'int8')}))`);
  await stack.pool.query(sql.unsafe`VACUUM ANALYZE push_pending`);
}

async function drainBurst(
  agent: Agent,
  devices: readonly ApiDevice[],
  concurrency: number,
  expectedItems: number,
  target: (d: ApiDevice) => { url: string; headers: Record<string, string> },
): Promise<Burst> {
  const latencies: number[] = [];
  const started = performance.now();
  const failures = await settleAll(devices, concurrency, async (device) => {
    const { url, headers } = target(device);
    const t = performance.now();
    const response = await request(url, { method: 'POST', headers, dispatcher: agent });
    const items = (await response.body.json()) as unknown[];
    latencies.push(performance.now() - t);
    if (response.statusCode !== 200 || !Array.isArray(items) || items.length !== expectedItems) {
      throw new Error(`drain answered ${response.statusCode} with ${Array.isArray(items) ? items.length : 'no'} items`);
    }
  });
  if (failures.length > 0) throw new Error(`${failures.length} drains failed: ${String(failures[0])}`);
  return { latencies, seconds: (performance.now() - started) / 1000 };
}

interface SyncTotals {
  readonly count: number;
  readonly seconds: number;
  readonly waits: number;
}

/** The api's rate-limit synchronisation totals, from its `/metrics`. */
async function syncTotals(apiUrl: string): Promise<SyncTotals> {
  const text = await (await fetch(`${apiUrl}/metrics`)).text();
  const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
  return {
    count: value('push_api_rate_limit_sync_seconds_count'),
    seconds: value('push_api_rate_limit_sync_seconds_sum'),
    waits: value('push_api_rate_limit_waits_total'),
  };
}

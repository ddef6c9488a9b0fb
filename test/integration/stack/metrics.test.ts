/**
 * What an operator's Prometheus scrapes, from the three built processes running as in
 * production (their own NATS here, so no other test file's bridge shares the stream): after
 * one message wakes one phone, every metric family the dashboard and the alerts use is there
 * with the value that message produced — API latency by route and status, wakes by
 * transport, priority and outcome, the message's and the wake's time to the drain, prunes by
 * reason, pending rows, registrations, bridge event outcomes and lag, and the Temporal SDK's
 * own metrics.
 */
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import { waitFor } from '../../../devstack/daemons.js';
import { createDeviceKeys, startDistributor, type LocalDistributor } from '../../../simulator/distributor.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { hostFixtures, nextId } from '../../support/host-fixtures.js';
import { signDeviceToken, testJwtSecret } from '../../support/jwt.js';
import { freePort } from '../../../devstack/ports.js';
import { startOwnNatsProduct, type OwnNatsProduct } from '../../support/own-nats-product.js';
import { dashboardMetricNames } from '../../unit/docs/dashboard-names.js';

let db: TestDatabase;
let distributor: LocalDistributor;
let product: OwnNatsProduct | undefined;
const urls = { api: '', worker: '', bridge: '', sdk: '' };
let natsUrl = '';

beforeAll(async () => {
  db = await freshDatabase();
  distributor = await startDistributor();
  const sdk = await freePort();
  product = await startOwnNatsProduct(db.url, 'metrics', { WORKER_SDK_METRICS_PORT: String(sdk), LOG_LEVEL: 'warn' });
  Object.assign(urls, product.urls, { sdk: `http://127.0.0.1:${sdk}` });
  natsUrl = product.natsUrl;
});

afterAll(async () => {
  await product?.stop();
  await distributor?.close();
  await db?.drop();
});

const scrape = async (url: string) => (await fetch(`${url}/metrics`)).text();

/** The value of one sample, or undefined: `name{a="x",b="y"} value` with exactly these labels in any order. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)/.exec(line);
    if (match === null || match[1] !== name) continue;
    const found = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => found[k] === v)) return Number(match[3]);
  }
  return undefined;
}

const family = (text: string, name: string) => new RegExp(`^# TYPE ${name} `, 'm').test(text);

describe('metrics of api, worker, bridge and the Temporal SDK', () => {
  it('count one message from the bridge to the phone, and expose every family the dashboard uses', async () => {
    const host = hostFixtures(db.pool);
    const [alice, bob] = await host.users(2);
    const dm = await host.dm([alice!, bob!]);
    const keys = createDeviceKeys();
    const endpoint = distributor.register(keys);
    const token = await signDeviceToken({ userId: bob!, deviceId: 'metrics-phone', secret: testJwtSecret });
    await db.pool.query(
      sql.unsafe`INSERT INTO refresh_tokens (user_id, device_id, expires_at) VALUES (${bob!}, 'metrics-phone', now() + interval '1 day')`,
    );
    const put = await fetch(`${urls.api}/api/push/registration`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        transport: 'unifiedpush',
        token: endpoint,
        p256dh: keys.p256dh.toString('base64url'),
        auth: keys.auth.toString('base64url'),
      }),
    });
    expect(put.status).toBe(200);

    const nc = await connect({ servers: natsUrl });
    const event = { id: nextId(), channel_id: dm, author_id: alice!, created_at: new Date().toISOString() };
    await jetstream(nc).publish(`channel.${dm}.MESSAGE_CREATE`, JSON.stringify(event));
    await nc.close();
    await waitFor('the wake', async () => distributor.received.some((m) => m.endpoint === endpoint), 30_000);

    const worker = await scrape(urls.worker);
    expect(sample(worker, 'push_wakes_total', { transport: 'unifiedpush', priority: 'high', outcome: 'delivered' })).toBe(1);
    expect(sample(worker, 'push_pending_rows')).toBe(1);
    expect(sample(worker, 'push_registrations', { transport: 'unifiedpush' })).toBe(1);
    expect(sample(worker, 'push_registrations', { transport: 'fcm' })).toBe(0);
    expect(sample(worker, 'push_registrations_wake_outstanding', { transport: 'unifiedpush' })).toBe(1);
    expect(family(worker, 'push_registrations_pruned_total')).toBe(true);
    expect(family(worker, 'push_fcm_prune_breaker_open')).toBe(true);

    const drain = await fetch(`${urls.api}/api/push/drain`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
    expect(drain.status).toBe(200);
    await waitFor(
      'the pending-rows gauge to read 0 after the drain',
      async () => sample(await scrape(urls.worker), 'push_pending_rows') === 0,
      30_000,
    );

    const api = await scrape(urls.api);
    expect(sample(api, 'push_api_request_duration_seconds_count', { route: '/api/push/drain', method: 'POST', status: '200' })).toBe(1);
    // The drain was the receipt: the DM's time to it, and the wake's.
    expect(sample(api, 'push_message_to_drain_seconds_count', { transport: 'unifiedpush', priority: 'high' })).toBe(1);
    expect(sample(api, 'push_wake_to_drain_seconds_count', { transport: 'unifiedpush', priority: 'high' })).toBe(1);
    expect(sample(await scrape(urls.worker), 'push_registrations_repeatedly_undrained', { transport: 'unifiedpush' })).toBe(0);
    expect(sample(api, 'push_api_request_duration_seconds_count', { route: '/api/push/registration', method: 'PUT', status: '200' })).toBe(1);
    expect(sample(api, 'push_api_registrations_total', { outcome: 'created' })).toBe(1);

    const bridge = await scrape(urls.bridge);
    expect(sample(bridge, 'push_bridge_events_total', { outcome: 'counted' })).toBe(1);
    expect(sample(bridge, 'push_bridge_event_lag_seconds_count')).toBe(1);

    // The device unregisters: its workflow completes (a family of its own in the SDK's metrics).
    expect((await fetch(`${urls.api}/api/push/registration`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } })).status).toBe(204);
    await waitFor(
      'the SDK to count the completed workflow',
      async () => sample(await scrape(urls.sdk), 'temporal_workflow_completed_total', { workflow_type: 'registrationWorkflow' }) === 1,
      30_000,
    );

    const sdk = await scrape(urls.sdk);
    for (const name of dashboardMetricNames(/^temporal_/)) {
      expect(family(sdk, name.replace(/_(bucket|count|sum)$/, '')), `${name} (used by docs/grafana-dashboard.json) on the SDK's /metrics`).toBe(true);
    }
    expect(sample(sdk, 'temporal_worker_task_slots_available', { worker_type: 'WorkflowWorker' })).toBeGreaterThan(0);
    expect(sample(sdk, 'temporal_workflow_task_queue_poll_succeed_total')).toBeGreaterThan(0);
    expect(family(sdk, 'temporal_request_total')).toBe(true);
  });
});

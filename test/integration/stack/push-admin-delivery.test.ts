/**
 * `push-admin device` shows what holds a device's wakes back: the FCM budget
 * left and any back-off in force, read from PostgreSQL — never a token.
 */
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inspectDevice } from '../../../src/admin/device-report.js';
import { formatDeviceReport } from '../../../src/admin/format.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { connectClient } from '../../support/dev-worker.js';

let db: TestDatabase;
let temporal: Awaited<ReturnType<typeof connectClient>>;
beforeAll(async () => {
  db = await freshDatabase();
  temporal = await connectClient();
  await db.pool.query(sql.unsafe`INSERT INTO users (id, username) VALUES (1, 'alice')`);
});
afterAll(async () => {
  await temporal?.close();
  await db?.drop();
});

const policy = { minIntervalMs: 15_000, rewakeAfterMs: 900_000, fcmBudget: { burst: 20, refillMs: 180_000, dmReserve: 5 } };

describe('push-admin device', () => {
  it('shows the FCM budget left and the back-off in force', async () => {
    const now = Date.now();
    // Six wakes spent (tat six refills ahead), a rate limit in force for ten minutes.
    await db.pool.query(sql.unsafe`
      INSERT INTO push_registrations (user_id, device_id, transport, token, fcm_budget_tat, backoff_until, backoff_reason, backoff_count)
      VALUES (1, 'pixel', 'fcm', 'SECRET-FCM-TOKEN', ${new Date(now + 6 * 180_000 - 1_000).toISOString()}, ${new Date(now + 600_000).toISOString()},
              'FCM 429 QUOTA_EXCEEDED', 2)`);
    const report = await inspectDevice({ pool: db.pool, temporal: temporal.client, namespace: 'default', uiUrl: undefined, policy }, '1', 'pixel');
    expect(report.delivery).toMatchObject({
      budget: { burst: 20, left: 14, leftForServerChannels: 9 },
      backoff: { reason: 'FCM 429 QUOTA_EXCEEDED', inARow: 2 },
    });
    const text = formatDeviceReport(report).join('\n');
    expect(text).toContain('FCM budget     14 of 20 wakes left now (9 for server channels, 5 kept for DMs); one more every 180 s');
    expect(text).toMatch(/back-off {7}no wake before \S+: FCM 429 QUOTA_EXCEEDED \(2 in a row\)/);
    expect(`${text}${JSON.stringify(report)}`).not.toContain('SECRET-FCM-TOKEN');
  });

  it('shows no budget for UnifiedPush, and no back-off once it is over', async () => {
    await db.pool.query(sql.unsafe`
      INSERT INTO push_registrations (user_id, device_id, transport, token, backoff_until, backoff_reason, backoff_count)
      VALUES (1, 'fairphone', 'unifiedpush', 'https://up.example/SECRET', now() - interval '1 minute', 'UnifiedPush 429: rate limited', 1)`);
    const report = await inspectDevice(
      { pool: db.pool, temporal: temporal.client, namespace: 'default', uiUrl: undefined, policy },
      '1',
      'fairphone',
    );
    expect(report.delivery).toMatchObject({ budget: null, backoff: null, next: { due: false, readyAt: null } });
    expect(formatDeviceReport(report).join('\n')).toContain('back-off       none');
    expect(formatDeviceReport(report).join('\n')).toContain('next wake      none: nothing pending');
  });

  it('says when the next wake may go, by the wake policy: a DM behind an outstanding server-channel wake escalates it', async () => {
    await db.pool.query(sql.unsafe`
      INSERT INTO push_registrations (user_id, device_id, transport, token, wake_outstanding, last_woken_at, last_wake_priority)
      VALUES (1, 'tablet', 'unifiedpush', 'https://up.example/SECRET', true, now() - interval '5 seconds', 'normal')`);
    await db.pool.query(sql.unsafe`
      INSERT INTO push_pending (registration_id, channel_id, message_count, first_message_id, first_at, last_message_id, is_dm)
      SELECT id, 77, 1, 1, now(), 1, true FROM push_registrations WHERE device_id = 'tablet'`);
    const report = await inspectDevice({ pool: db.pool, temporal: temporal.client, namespace: 'default', uiUrl: undefined, policy }, '1', 'tablet');
    // Inside the interval: not yet, but at its end (ten seconds from now), not at the re-wake.
    expect(report.delivery?.next).toMatchObject({ due: false, priority: 'high', escalation: true });
    const readyIn = report.delivery!.next.readyAt! - Date.now();
    expect(readyIn).toBeGreaterThan(0);
    expect(readyIn).toBeLessThanOrEqual(policy.minIntervalMs);
    expect(formatDeviceReport(report).join('\n')).toMatch(
      /next wake {6}\S+ at the earliest \(high priority, escalating the outstanding normal wake\)/,
    );
  });
});

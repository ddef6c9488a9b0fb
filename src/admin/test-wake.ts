/**
 * `push-admin wake <user> <device>`: what `POST /api/push/registration/test` does, for an
 * operator — one test wake of the device through its workflow, under every rule — then waits
 * for the provider's own answer to it (the send activity records it as `last_send_answer`: the
 * transport and HTTP status, FCM's error code, or why it was held back; never a token, an
 * endpoint or a key). An operator is not held to the device's one test wake a minute; the
 * wake counts toward it.
 */
import type { Client } from '@temporalio/client';
import { sql } from 'slonik';
import { z } from 'zod';
import type { DatabasePool } from '../db/pool.js';
import { requestTestWake } from '../api/registration-store.js';
import { deliveryJson, type DeliveryJson } from '../api/delivery-state.js';
import { signalPending } from '../../temporal/registration-workflows.js';
import type { WakePolicy } from '../../domain/wake-policy.js';
import type { TransportName } from '../../domain/vocabulary.js';

export interface TestWakeDeps {
  readonly pool: DatabasePool;
  readonly temporal: Client;
  readonly taskQueue: string;
  readonly policy: WakePolicy;
  /** How long to wait for the provider's answer. */
  readonly timeoutMs: number;
  /** Between two reads of the answer. */
  readonly pollMs?: number;
}

/**
 * - `accepted`: the provider took the test wake (the phone should drain within seconds);
 * - `refused`: it was sent, or held back at the send (an outage), and not accepted: `answer` says why;
 * - `held`: a back-off or the FCM budget holds it beyond the wait: the delivery state says until when;
 * - `no-answer`: nothing was sent in time (no worker? a workflow stuck?).
 */
export type TestWakeOutcome = 'accepted' | 'refused' | 'held' | 'no-answer';

export interface TestWakeReport {
  readonly userId: string;
  readonly deviceId: string;
  readonly transport: TransportName | null;
  readonly outcome: TestWakeOutcome | 'no-registration';
  /** The device's delivery state when the test wake was asked for (what `GET` would have said). */
  readonly asked: DeliveryJson | null;
  /** The provider's answer to the send that carried the test wake, and when. */
  readonly answer: { readonly text: string; readonly at: Date } | null;
  readonly waitedMs: number;
}

const answerRow = z.object({
  last_send_answer: z.string().nullable(),
  last_send_at: z.date().nullable(),
  test_wake_pending: z.boolean(),
  test_wake_requested_at: z.date().nullable(),
});

export async function testWakeDevice(deps: TestWakeDeps, userId: string, deviceId: string): Promise<TestWakeReport> {
  const started = Date.now();
  const device = { userId, deviceId };
  const request = await requestTestWake(deps.pool, device, 0);
  if (request === null || request.kind !== 'requested') {
    return { userId, deviceId, transport: null, outcome: 'no-registration', asked: null, answer: null, waitedMs: 0 };
  }
  const { view } = request;
  await signalPending(deps.temporal, deps.taskQueue, device, view.transport);
  const asked = deliveryJson(deps.policy, view, Date.now());
  const base = { userId, deviceId, transport: view.transport, asked };
  const heldUntil = asked.delivery.until === undefined ? undefined : Date.parse(asked.delivery.until);
  if (heldUntil !== undefined && heldUntil - started > deps.timeoutMs) return { ...base, outcome: 'held', answer: null, waitedMs: 0 };
  for (;;) {
    const row = await deps.pool.maybeOne(sql.type(answerRow)`
      SELECT last_send_answer, last_send_at, test_wake_pending, test_wake_requested_at
      FROM push_registrations WHERE user_id = ${userId} AND device_id = ${deviceId}`);
    const waitedMs = Date.now() - started;
    if (row === null) return { ...base, outcome: 'no-registration', answer: null, waitedMs };
    const answered = row.last_send_at !== null && row.test_wake_requested_at !== null && row.last_send_at >= row.test_wake_requested_at;
    if (answered) {
      const answer = { text: row.last_send_answer ?? '(no answer recorded)', at: row.last_send_at! };
      return { ...base, outcome: row.test_wake_pending ? 'refused' : 'accepted', answer, waitedMs };
    }
    if (waitedMs >= deps.timeoutMs) return { ...base, outcome: 'no-answer', answer: null, waitedMs };
    await new Promise((resolve) => setTimeout(resolve, deps.pollMs ?? 250));
  }
}

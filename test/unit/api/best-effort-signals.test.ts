/**
 * The api's `registered` signals, paced: a request never waits longer than its deadline for
 * the workers' backlog, what waits is bounded, and stopping says what was not sent. Against a
 * Temporal client that records the calls and whose workers take nothing (every workflow keeps a
 * task pending), so only the first window goes out.
 */
import { pino } from 'pino';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createBestEffortSignals } from '../../../src/api/best-effort-signals.js';
import type { TemporalHandle } from '../../../temporal/client.js';

function stalledTemporal() {
  const started: string[] = [];
  const temporal = {
    client: {
      options: { namespace: 'default' },
      workflow: {
        signalWithStart: async (_type: unknown, options: { workflowId: string }) => void started.push(options.workflowId),
      },
      // Every workflow still has its task: no worker takes any.
      workflowService: { describeWorkflowExecution: async () => ({ pendingWorkflowTask: {} }) },
    },
    withDeadline: <T>(_ms: number, call: () => Promise<T>) => call(),
  } as unknown as TemporalHandle;
  return { temporal, started };
}

function capturedLog() {
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level: 'warn' }, new Writable({ write: (chunk: Buffer, _e, done) => void (lines.push(JSON.parse(chunk.toString())), done()) }));
  return { log, lines };
}

const device = (i: number) => ({ userId: String(1_000 + i), deviceId: 'phone' });
const firstWindow = 24;

describe('the api’s registered signals, paced', () => {
  it('answers a request queued behind the backlog at its deadline, and sends nothing more while the workers take nothing', async () => {
    const { temporal, started } = stalledTemporal();
    const { log } = capturedLog();
    const signals = createBestEffortSignals(temporal, 'q', log, { backlogMs: 250, deadlineMs: 50 });
    const answered = await Promise.all(Array.from({ length: 40 }, (_, i) => signals.registered(device(i), 'unifiedpush').then(() => true)));
    expect(answered.every(Boolean)).toBe(true);
    expect(started).toHaveLength(firstWindow);
    signals.stop();
  });

  it('drops a registration beyond the bound, counted and logged by ids, and says how many were not sent when stopping', async () => {
    const { temporal, started } = stalledTemporal();
    const { log, lines } = capturedLog();
    const signals = createBestEffortSignals(temporal, 'q', log, { backlogMs: 250, deadlineMs: 10, maxQueued: 5 });
    for (let i = 0; i < firstWindow + 6; i++) await signals.registered(device(i), 'unifiedpush');
    const dropped = lines.filter((l) => l['signal'] === 'registered');
    expect(dropped.map((l) => l['userId'])).toEqual([device(firstWindow + 5).userId]);
    signals.stop();
    expect(lines.at(-1)).toMatchObject({ queued: 5 });
    expect(started).toHaveLength(firstWindow);
  });

  it('sends every registration at once when pacing is off', async () => {
    const { temporal, started } = stalledTemporal();
    const { log } = capturedLog();
    const signals = createBestEffortSignals(temporal, 'q', log, { backlogMs: 0 });
    await Promise.all(Array.from({ length: 40 }, (_, i) => signals.registered(device(i), 'unifiedpush')));
    expect(started).toHaveLength(40);
    signals.stop();
  });
});

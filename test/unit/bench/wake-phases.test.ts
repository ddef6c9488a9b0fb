/** A slow DM's wait taken apart from its device's history: intake, Temporal's queue, the worker. */
import proto, { type temporal } from '@temporalio/proto';
import { describe, expect, it } from 'vitest';
import { wakePhases } from '../../../bench/wake-phases.js';

const T = proto.temporal.api.enums.v1.EventType;
type Event = temporal.api.history.v1.IHistoryEvent;

// The decoder hands out a Long for `seconds`; a number reads the same through String().
const at = (ms: number) => ({ seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1e6 }) as unknown as Event['eventTime'];
const event = (eventType: temporal.api.enums.v1.EventType, ms: number, signalName?: string): Event => ({
  eventType,
  eventTime: at(ms),
  ...(signalName === undefined ? {} : { workflowExecutionSignaledEventAttributes: { signalName } }),
});

const published = 1_000_000;

describe('wakePhases', () => {
  it('splits a signal-with-start into intake, queue and worker', () => {
    const events = [
      event(T.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, published + 40),
      event(T.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, published + 40, 'pending'),
      event(T.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, published + 40),
      event(T.EVENT_TYPE_WORKFLOW_TASK_STARTED, published + 2_540),
      event(T.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, published + 2_600),
    ];
    expect(wakePhases(events, published, published + 2_580)).toEqual({ intakeMs: 40, queueMs: 2_500, workerMs: 40, workflowTasks: 1 });
  });

  it('counts a signal taken while a task runs from the next task’s scheduling, and a retried task as one more', () => {
    const events = [
      event(T.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, published - 60_000, 'registered'),
      event(T.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, published - 60_000),
      event(T.EVENT_TYPE_WORKFLOW_TASK_STARTED, published - 1),
      event(T.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, published + 30, 'pending'),
      event(T.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, published + 100),
      event(T.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, published + 100),
      event(T.EVENT_TYPE_WORKFLOW_TASK_STARTED, published + 150),
      event(T.EVENT_TYPE_WORKFLOW_TASK_FAILED, published + 160),
      event(T.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, published + 170),
      event(T.EVENT_TYPE_WORKFLOW_TASK_STARTED, published + 400),
    ];
    expect(wakePhases(events, published, published + 450)).toEqual({ intakeMs: 30, queueMs: 300, workerMs: 50, workflowTasks: 2 });
  });

  it('counts a signal that joins a task already waiting from the signal', () => {
    const events = [
      event(T.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, published - 500),
      event(T.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, published + 20, 'pending'),
      event(T.EVENT_TYPE_WORKFLOW_TASK_STARTED, published + 220),
    ];
    expect(wakePhases(events, published, published + 260)).toEqual({ intakeMs: 20, queueMs: 200, workerMs: 40, workflowTasks: 1 });
  });

  it('says nothing of a history without the signal or without a task started before the wake', () => {
    const signalOnly = [
      event(T.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, published + 10, 'pending'),
      event(T.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, published + 10),
    ];
    expect(wakePhases(signalOnly, published, published + 50)).toBeUndefined();
    const earlier = [event(T.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, published - 10_000, 'pending')];
    expect(wakePhases(earlier, published, published + 50)).toBeUndefined();
  });
});

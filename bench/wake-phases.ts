/**
 * Where one message's wake spent its time, read from the woken device's workflow history:
 *
 * - **intake**: the message's `created_at` → its signal accepted (`WorkflowExecutionSignaled`):
 *   JetStream, the bridge's transaction, the signal's round trip;
 * - **queue**: that signal's workflow task scheduled → started: the wait in Temporal's task queue
 *   (and for a free slot in a worker, which polls only when it has one);
 * - **worker**: the task started → the wake at the distributor: the activation, the claim and the
 *   send (local activities inside the task).
 *
 * The times are the Temporal server's and this machine's clocks, which are the same clock here.
 * A task that failed or timed out and ran again shows as a longer queue or worker phase and is
 * counted in `workflowTasks`.
 */
import proto, { type temporal } from '@temporalio/proto';

const EventType = proto.temporal.api.enums.v1.EventType;
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

export interface WakePhases {
  readonly intakeMs: number;
  readonly queueMs: number;
  readonly workerMs: number;
  /** Workflow tasks started between the signal and the wake (1 when nothing was retried). */
  readonly workflowTasks: number;
}

/** The phases of the first signal named `signalName` at or after `publishedAt`; undefined when the history lacks it. */
export function wakePhases(events: readonly HistoryEvent[], publishedAt: number, wokenAt: number, signalName = 'pending'): WakePhases | undefined {
  const signalIndex = events.findIndex(
    (e) =>
      e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED &&
      e.workflowExecutionSignaledEventAttributes?.signalName === signalName &&
      eventTimeMs(e) >= publishedAt - clockSlackMs,
  );
  if (signalIndex < 0) return undefined;
  const signalled = eventTimeMs(events[signalIndex]!);
  // The task that took the signal: scheduled with it or already scheduled (and not started) before it.
  const scheduled = lastBefore(events, signalIndex, EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED);
  const startedBefore = lastBefore(events, signalIndex, EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED);
  const pendingAtSignal = scheduled !== undefined && (startedBefore === undefined || startedBefore.index < scheduled.index);
  const after = events.slice(signalIndex + 1);
  const starts = after.filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED && eventTimeMs(e) <= wokenAt);
  const scheduledAt = pendingAtSignal
    ? signalled
    : eventTimeMs(after.find((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED) ?? events[signalIndex]!);
  const lastStart = starts.at(-1);
  if (lastStart === undefined) return undefined;
  const startedAt = eventTimeMs(lastStart);
  return {
    intakeMs: signalled - publishedAt,
    queueMs: startedAt - Math.max(scheduledAt, signalled),
    workerMs: wokenAt - startedAt,
    workflowTasks: starts.length,
  };
}

/** Server and bench share a clock here, but `created_at` is taken in ms and events in ns. */
const clockSlackMs = 5;

function lastBefore(events: readonly HistoryEvent[], index: number, type: temporal.api.enums.v1.EventType) {
  for (let i = index - 1; i >= 0; i--) if (events[i]!.eventType === type) return { index: i, event: events[i]! };
  return undefined;
}

export function eventTimeMs(event: HistoryEvent): number {
  return Number(String(event.eventTime?.seconds ?? 0)) * 1000 + (event.eventTime?.nanos ?? 0) / 1e6;
}

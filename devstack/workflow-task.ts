import proto from '@temporalio/proto';
import type { WorkflowHandle } from '@temporalio/client';

const { EventType } = proto.temporal.api.enums.v1;
const taskEvents = new Set<number>([
  EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
  EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED,
  EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
  EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED,
  EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT,
]);

/**
 * Whether the workflow has a task in flight: from its WorkflowTaskScheduled until its
 * Completed, Failed or TimedOut. Read from the history, because the time-skipping test server's
 * describe leaves `pendingWorkflowTask` unset (a real server's describe says it directly).
 */
export async function workflowTaskInFlight(handle: WorkflowHandle): Promise<boolean> {
  const { events } = await handle.fetchHistory();
  const type = Number((events ?? []).findLast((event) => taskEvents.has(Number(event.eventType)))?.eventType);
  return type === EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED || type === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED;
}

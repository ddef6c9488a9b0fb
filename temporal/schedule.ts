/**
 * The `push-maintenance` Temporal Schedule: every 10 minutes, never two runs at
 * once, none longer than an hour. Ensured at every worker start — created if missing, brought back to this definition
 * if someone changed it — so two workers starting together are harmless.
 */
import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client, type ScheduleOptions } from '@temporalio/client';
import { maintenanceScheduleId, maintenanceWorkflowType } from './names.js';

export interface MaintenanceScheduleOptions {
  readonly taskQueue: string;
  readonly scheduleId?: string;
  readonly everyMs?: number;
}

/** How often maintenance runs (docs/design.md: the no-session sweep, every 10 minutes). */
export const maintenanceEveryMs = 10 * 60_000;

export async function ensureMaintenanceSchedule(client: Client, options: MaintenanceScheduleOptions): Promise<string> {
  const scheduleId = options.scheduleId ?? maintenanceScheduleId;
  const definition = {
    spec: { intervals: [{ every: options.everyMs ?? maintenanceEveryMs }] },
    action: {
      type: 'startWorkflow' as const,
      workflowType: maintenanceWorkflowType,
      workflowId: scheduleId,
      taskQueue: options.taskQueue,
      args: [{}],
      // A run that cannot finish (a workflow task failing on every attempt) must not hold
      // the Schedule forever: with overlap SKIP it would skip every later run.
      workflowExecutionTimeout: '1 hour',
    },
    policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '10 minutes' },
  } satisfies Omit<ScheduleOptions, 'scheduleId'>;
  try {
    await client.schedule.create({ scheduleId, ...definition });
  } catch (error) {
    if (!(error instanceof ScheduleAlreadyRunning)) throw error;
    await client.schedule.getHandle(scheduleId).update((previous) => ({ ...previous, ...definition, state: previous.state }));
  }
  return scheduleId;
}

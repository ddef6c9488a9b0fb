/**
 * Workflows that cannot make progress ("wedged"): their workflow task fails or times out on
 * every attempt — a history the worker's code cannot replay (a non-determinism error, TMPRL1100),
 * a bug that throws in workflow code, a task that never completes in time. Such a run still
 * counts as running, answers no signal and holds no timer that fires.
 *
 * Temporal flags them itself: after `system.numConsecutiveWorkflowTaskProblemsToTriggerSearchAttribute`
 * consecutive failed or timed-out workflow tasks (5 by default, on the CLI dev server and the
 * self-hosted server 1.32 alike; on Temporal Cloud always) it sets the `TemporalReportedProblems`
 * search attribute (`category=WorkflowTaskFailed` or `category=WorkflowTaskTimedOut`, and a
 * `cause=…`), and clears it at the first task that completes. Visibility indexes it (a GIN index
 * in SQL visibility), so finding them costs a query over the flagged runs, at any fleet size —
 * never a describe per workflow.
 */
import type { Client, WorkflowExecutionInfo } from '@temporalio/client';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { parseRegistrationWorkflowId, registrationWorkflowType } from './names.js';

/** The search attribute Temporal sets on a run whose workflow tasks keep failing. */
export const reportedProblemsAttribute = 'TemporalReportedProblems';
const ReportedProblems = defineSearchAttributeKey(reportedProblemsAttribute, SearchAttributeType.KEYWORD_LIST);
const problemCategories = ['category=WorkflowTaskFailed', 'category=WorkflowTaskTimedOut'] as const;

/** The visibility query for wedged runs of `workflowType` (or of any type) on `taskQueue`. */
export function wedgedQuery(taskQueue: string, workflowType?: string): string {
  return [
    ...(workflowType === undefined ? [] : [`WorkflowType = ${quote(workflowType)}`]),
    `TaskQueue = ${quote(taskQueue)}`,
    `ExecutionStatus = 'Running'`,
    `${reportedProblemsAttribute} IN (${problemCategories.map(quote).join(', ')})`,
  ].join(' AND ');
}

/** How many runs of `workflowType` on `taskQueue` are wedged (one visibility count). */
export async function countWedged(client: Client, taskQueue: string, workflowType: string): Promise<number> {
  const { count } = await client.workflow.count(wedgedQuery(taskQueue, workflowType));
  return count;
}

export interface WedgedRegistration {
  readonly userId: string;
  readonly deviceId: string;
  readonly workflowId: string;
  readonly runId: string;
  readonly startTime: Date;
  /** What Temporal reported, e.g. `category=WorkflowTaskFailed`, `cause=WorkflowTaskFailedCauseNonDeterministicError`. */
  readonly problems: readonly string[];
}

/** The wedged registration workflows on `taskQueue`, a visibility page at a time. */
export async function* listWedgedRegistrations(client: Client, taskQueue: string, pageSize = 1_000): AsyncGenerator<WedgedRegistration> {
  for await (const info of client.workflow.list({ query: wedgedQuery(taskQueue, registrationWorkflowType), pageSize })) {
    const device = parseRegistrationWorkflowId(info.workflowId);
    if (device === undefined) continue;
    yield { ...device, workflowId: info.workflowId, runId: info.runId, startTime: info.startTime, problems: reportedProblems(info) };
  }
}

/** The `TemporalReportedProblems` of a listed or described run; empty when it is not flagged. */
export function reportedProblems(info: Pick<WorkflowExecutionInfo, 'typedSearchAttributes'>): string[] {
  return [...(info.typedSearchAttributes.get(ReportedProblems) ?? [])];
}

/**
 * Whether the namespace flags wedged runs at all: a self-hosted server can turn it off
 * (`numConsecutiveWorkflowTaskProblemsToTriggerSearchAttribute` = 0), and then nothing here
 * finds them (the SDK's `temporal_workflow_task_execution_failed_total` still counts failures).
 */
export async function wedgedRunsFlagged(client: Client): Promise<boolean> {
  const response = await client.workflowService.describeNamespace({ namespace: client.options.namespace });
  return response.namespaceInfo?.capabilities?.reportedProblemsSearchAttribute === true;
}

/** A string literal of Temporal's list-filter language. */
function quote(value: string): string {
  return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

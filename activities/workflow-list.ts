/**
 * Temporal's list of running registration workflows (visibility), for maintenance: by task
 * queue and workflow type, newest first, optionally only those started at or before a time,
 * or only those of some users (the `PushUserId` search attribute).
 */
import type { Client } from '@temporalio/client';
import { registrationWorkflowType } from '../temporal/names.js';

export interface ListedWorkflow {
  readonly workflowId: string;
  /** Start time of the run, RFC 3339 with nanoseconds: a position Temporal's `StartTime` compares exactly. */
  readonly startedAt: string;
}

export interface ListOptions {
  readonly taskQueue: string;
  readonly pageSize: number;
  /** RFC 3339; '' or absent: no bound. */
  readonly startedAtOrBefore?: string;
  /** Decimal user ids. */
  readonly userIds?: readonly string[];
}

export async function* listRunningRegistrations(client: Client, options: ListOptions): AsyncGenerator<ListedWorkflow> {
  if (options.userIds !== undefined && options.userIds.length === 0) return;
  const clauses = [`WorkflowType = ${quote(registrationWorkflowType)}`, `TaskQueue = ${quote(options.taskQueue)}`, `ExecutionStatus = 'Running'`];
  if (options.startedAtOrBefore) clauses.push(`StartTime <= ${quote(options.startedAtOrBefore)}`);
  if (options.userIds !== undefined) clauses.push(`PushUserId IN (${options.userIds.map(quote).join(', ')})`);
  for await (const info of client.workflow.list({ query: clauses.join(' AND '), pageSize: options.pageSize })) {
    yield { workflowId: info.workflowId, startedAt: rfc3339Nanos(info.raw.startTime, info.startTime) };
  }
}

/** A string literal of Temporal's list-filter language. */
export function quote(value: string): string {
  return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

type Timestamp = { seconds?: { toString(): string } | number | null; nanos?: number | null } | null | undefined;

/** A protobuf timestamp as RFC 3339 with all nine fractional digits (a `Date` keeps only milliseconds). */
export function rfc3339Nanos(timestamp: Timestamp, fallback: Date): string {
  if (timestamp?.seconds === undefined || timestamp.seconds === null) return fallback.toISOString();
  const seconds = Number(timestamp.seconds.toString());
  const whole = new Date(seconds * 1000).toISOString().slice(0, 19);
  return `${whole}.${String(timestamp.nanos ?? 0).padStart(9, '0')}Z`;
}

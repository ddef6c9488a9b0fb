/**
 * The Temporal calls that start and signal registration workflows: how the api
 * (src/api/best-effort-signals.ts), the bridge (src/bridge/signal-pending.ts) and
 * maintenance talk to them. Every call is
 * idempotent and safe to repeat; PostgreSQL stays the truth and these are hints.
 */
import {
  WorkflowExecutionAlreadyStartedError,
  WorkflowIdConflictPolicy,
  WorkflowIdReusePolicy,
  WorkflowNotFoundError,
  type Client,
} from '@temporalio/client';
import { TypedSearchAttributes, type SignalDefinition } from '@temporalio/common';
import { drainedSignal, pendingSignal, registeredSignal, deletedSignal, type RegistrationWorkflowInput } from './registration-messages.js';
import { PushDeviceId, PushTransport, PushUserId, registrationWorkflowId, registrationWorkflowType } from './names.js';
import type { DeviceIdentity, TransportName } from '../domain/vocabulary.js';
import type { WorkflowTaskSeen } from '../src/pacing/pacer.js';

/** The input every starter of this release gives a device's new run. */
export function newRunInput(device: DeviceIdentity, transport: TransportName): RegistrationWorkflowInput {
  return { userId: device.userId, deviceId: device.deviceId, transport, beginsUnmarked: true };
}

function startOptions(taskQueue: string, device: DeviceIdentity, transport: TransportName) {
  const args: [RegistrationWorkflowInput] = [newRunInput(device, transport)];
  return {
    taskQueue,
    workflowId: registrationWorkflowId(device.userId, device.deviceId),
    args,
    typedSearchAttributes: new TypedSearchAttributes([
      { key: PushUserId, value: device.userId },
      { key: PushDeviceId, value: device.deviceId },
      { key: PushTransport, value: transport },
    ]),
    workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
  };
}

/** After a `PUT`: start the device's workflow, or tell the running one (new transport). */
export async function signalRegistered(client: Client, taskQueue: string, device: DeviceIdentity, transport: TransportName): Promise<void> {
  await client.workflow.signalWithStart(registrationWorkflowType, {
    ...startOptions(taskQueue, device, transport),
    signal: registeredSignal,
    signalArgs: [{ transport }],
  });
}

/** New pending rows: wake the workflow, starting it if it is missing. */
export async function signalPending(client: Client, taskQueue: string, device: DeviceIdentity, transport: TransportName): Promise<void> {
  await client.workflow.signalWithStart(registrationWorkflowType, {
    ...startOptions(taskQueue, device, transport),
    signal: pendingSignal,
    signalArgs: [],
  });
}

/**
 * What the device's workflow's describe says of its workflow task (src/pacing/pacer.ts samples
 * the workers' backlog with it): none; one waiting in `taskQueue` or running in a worker on its
 * first attempt (a wake's claim and send run inside its task, as local activities); or one that
 * is no part of that backlog — retried after a failure (it may fail for ever: a nondeterminism,
 * a type no worker knows), or on another task queue. A read; it changes nothing.
 */
export async function workflowTaskOf(client: Client, taskQueue: string, device: DeviceIdentity): Promise<WorkflowTaskSeen> {
  const described = await client.workflowService.describeWorkflowExecution({
    namespace: client.options.namespace,
    execution: { workflowId: registrationWorkflowId(device.userId, device.deviceId) },
  });
  const task = described.pendingWorkflowTask;
  if (task == null) return 'none';
  const queue = described.executionConfig?.taskQueue?.name;
  return (task.attempt ?? 1) > 1 || (queue != null && queue !== taskQueue) ? 'wedged' : 'waiting';
}

/**
 * Maintenance found no running workflow for a registration: start one (a fresh run looks at
 * PostgreSQL once). Returns false when one was running after all (visibility lags a little).
 */
export async function startIfMissing(client: Client, taskQueue: string, device: DeviceIdentity, transport: TransportName): Promise<boolean> {
  try {
    await client.workflow.start(registrationWorkflowType, startOptions(taskQueue, device, transport));
    return true;
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError) return false;
    throw error;
  }
}

/**
 * Starts the device's workflow anew, ending the run in progress, if any, in the same call
 * (Temporal's TERMINATE_EXISTING: there is no moment without a run). The new run holds
 * nothing of the old one: it looks at PostgreSQL at once. Returns the new run's id.
 */
export async function restartRegistrationWorkflow(
  client: Client,
  taskQueue: string,
  device: DeviceIdentity,
  transport: TransportName,
): Promise<string> {
  const handle = await client.workflow.start(registrationWorkflowType, {
    ...startOptions(taskQueue, device, transport),
    workflowIdConflictPolicy: WorkflowIdConflictPolicy.TERMINATE_EXISTING,
  });
  return handle.firstExecutionRunId;
}

/**
 * The `drained` signal api versions before the lean plan sent after a drain. Workflows now
 * learn of drains from their claims and ignore it; tests send it to show that a late one is
 * harmless.
 */
export async function signalDrained(client: Client, device: DeviceIdentity): Promise<void> {
  await signalIfRunning(client, device, drainedSignal);
}

/** After the registration was deleted: the workflow checks and ends. */
export async function signalDeleted(client: Client, device: DeviceIdentity): Promise<void> {
  await signalIfRunning(client, device, deletedSignal);
}

async function signalIfRunning(client: Client, device: DeviceIdentity, signal: SignalDefinition<[]>): Promise<void> {
  try {
    await client.workflow.getHandle(registrationWorkflowId(device.userId, device.deviceId)).signal(signal);
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return; // not running: nothing to tell
    throw error;
  }
}

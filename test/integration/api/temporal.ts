/**
 * What Temporal received from the api, read back with a plain client: no worker runs on the
 * api tests' task queues, so a workflow the api started stays exactly as the api left it.
 */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { waitFor } from '../../../devstack/daemons.js';
import { registrationWorkflowId, PushDeviceId, PushTransport, PushUserId } from '../../../temporal/names.js';

export interface SeenWorkflow {
  readonly status: string;
  readonly taskQueue: string;
  readonly searchAttributes: { readonly userId?: string; readonly deviceId?: string; readonly transport?: string };
  /** Signals in history order, with their first argument decoded. */
  readonly signals: readonly { readonly name: string; readonly arg: unknown }[];
}

export async function seenWorkflow(client: Client, userId: string, deviceId: string): Promise<SeenWorkflow | undefined> {
  const handle = client.workflow.getHandle(registrationWorkflowId(userId, deviceId));
  try {
    const description = await handle.describe();
    const history = await handle.fetchHistory();
    const signals = (history.events ?? []).flatMap((event) => {
      const signaled = event.workflowExecutionSignaledEventAttributes;
      if (signaled === null || signaled === undefined) return [];
      const payload = signaled.input?.payloads?.[0];
      const arg = payload?.data ? (JSON.parse(Buffer.from(payload.data).toString('utf8')) as unknown) : undefined;
      return [{ name: signaled.signalName ?? '', arg }];
    });
    const attributes = description.typedSearchAttributes;
    return {
      status: description.status.name,
      taskQueue: description.taskQueue,
      searchAttributes: { userId: attributes.get(PushUserId), deviceId: attributes.get(PushDeviceId), transport: attributes.get(PushTransport) },
      signals,
    };
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return undefined;
    throw error;
  }
}

/** The whole history as text, payload bytes decoded: to search it for what must not be there. */
export async function historyText(client: Client, userId: string, deviceId: string): Promise<string> {
  const history = await client.workflow.getHandle(registrationWorkflowId(userId, deviceId)).fetchHistory();
  return JSON.stringify(history, (_key, value: unknown) => (value instanceof Uint8Array ? Buffer.from(value).toString('utf8') : value));
}

/** Ends the workflows a test file left running on its task queue (no worker would ever end them). */
export async function terminateAll(client: Client, taskQueue: string): Promise<void> {
  const running = client.workflow.list({ query: `TaskQueue = '${taskQueue}' AND ExecutionStatus = 'Running'` });
  const ends: Promise<unknown>[] = [];
  for await (const workflow of running) {
    ends.push(
      client.workflow
        .getHandle(workflow.workflowId)
        .terminate('api test finished')
        .catch(() => undefined),
    );
  }
  await Promise.all(ends);
}

/**
 * The device's workflow once it has received `registered` signals at least `count` times: the
 * api owes each `PUT`'s signal-with-start in the outbox, and the signaller beside the test api
 * sends it a moment after the answer.
 */
export async function registeredWorkflow(client: Client, userId: string, deviceId: string, count = 1): Promise<SeenWorkflow> {
  return waitFor(
    `the workflow of ${deviceId} to receive ${count} registered signal(s)`,
    async () => {
      const seen = await seenWorkflow(client, userId, deviceId);
      return seen !== undefined && seen.signals.filter((s) => s.name === 'registered').length >= count ? seen : undefined;
    },
    30_000,
  );
}

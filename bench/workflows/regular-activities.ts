/**
 * The reference of the wake-path measurement: a device's first wake as the registration
 * workflow makes it — on its `pending` signal-with-start, `claimWake`, then `sendWake` if the
 * claim succeeded — but with the claim and the send as regular activities (scheduled, started
 * and completed through the task queue) where the registration workflow runs them as local
 * ones. The activities, their time limits and retries are the registration workflow's own, and
 * it records what that workflow records beside them on a first wake (its patch markers, the
 * `PushTransport` search attribute), so that the two histories differ in the activities only.
 * It stands for the first wake, not a device's life: after its wake it ends.
 *
 * Bundled and run only by the wake-path measurement (bench/measure/wake-path.ts), on a worker
 * built by `buildWorker`, which registers the production activities.
 */
import { condition, patched, proxyActivities, setHandler, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../../activities/index.js';
import { PushTransport } from '../../temporal/names.js';
import { pendingSignal, type RegistrationWorkflowInput } from '../../workflows/registration-messages.js';
import { claimActivityOptions, deliveryControlPatch, leanPlanPatch, sendActivityOptions } from '../../workflows/registration.js';

export const regularActivitiesWorkflowType = 'regularActivitiesWorkflow';

const claims = proxyActivities<Activities>(claimActivityOptions);
const sends = proxyActivities<Activities>(sendActivityOptions);

export async function regularActivitiesWorkflow(input: RegistrationWorkflowInput): Promise<void> {
  const { userId, deviceId } = input;
  // The patches the registration workflow checks when it starts (a marker and a search
  // attribute each, in a new workflow).
  patched(deliveryControlPatch);
  patched(leanPlanPatch);
  let pending = false;
  setHandler(pendingSignal, () => void (pending = true));
  await condition(() => pending);
  const claim = await claims.claimWake({ userId, deviceId, now: Date.now() });
  if (claim.status !== 'claimed') return;
  if (workflowInfo().typedSearchAttributes.get(PushTransport) !== claim.transport) {
    upsertSearchAttributes([{ key: PushTransport, value: claim.transport }]);
  }
  await sends.sendWake({
    registrationId: claim.registrationId,
    userId,
    deviceId,
    priority: claim.priority,
    now: Date.now(),
    ...(claim.messageAt === undefined ? {} : { messageAt: claim.messageAt }),
  });
}

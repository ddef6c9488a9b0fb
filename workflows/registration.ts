/**
 * One long-lived workflow per push registration (contract §9). Placeholder of the foundation:
 * it lives until told to stop. The coalescing actor replaces it (issue 4).
 */
import { condition, defineSignal, setHandler } from '@temporalio/workflow';

export interface RegistrationWorkflowInput {
  readonly registrationId: string;
  readonly userId: string;
  readonly deviceId: string;
}

export const stopSignal = defineSignal('stop');

export async function registrationWorkflow(_input: RegistrationWorkflowInput): Promise<void> {
  let stopped = false;
  setHandler(stopSignal, () => {
    stopped = true;
  });
  await condition(() => stopped);
}

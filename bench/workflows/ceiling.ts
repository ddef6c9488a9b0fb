/**
 * The engine's own limit, as a reference for the fan-out: a workflow that does nothing but
 * wait for one signal and run one no-op local activity (the kind our claim and send are).
 * Bundled and run only by the benchmark's helper worker (bench/children/ceiling-worker.ts).
 */
import { condition, defineSignal, proxyLocalActivities, setHandler } from '@temporalio/workflow';

export interface CeilingActivities {
  noop(): Promise<void>;
}

export const ceilingWorkflowType = 'ceilingWorkflow';
export const ceilingSignal = defineSignal('pending');

const { noop } = proxyLocalActivities<CeilingActivities>({ startToCloseTimeout: '15s' });

export async function ceilingWorkflow(): Promise<void> {
  let signalled = false;
  setHandler(ceilingSignal, () => void (signalled = true));
  await condition(() => signalled);
  await noop();
}

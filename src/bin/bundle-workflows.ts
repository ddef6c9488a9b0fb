/**
 * Prebuilds the workflow bundle (`dist/workflow-bundle.js`) so workers start without running
 * webpack. Also the CI check that workflow code bundles: a Node built-in or I/O import fails it.
 */
import { writeFileSync } from 'node:fs';
import { bundleWorkflowCode } from '@temporalio/worker';
import { workflowBundlePath, workflowsSourcePath } from '../../temporal/worker.js';

const { code } = await bundleWorkflowCode({ workflowsPath: workflowsSourcePath, logger: quietLogger() });
writeFileSync(workflowBundlePath, code);

function quietLogger() {
  const nothing = () => undefined;
  return { log: nothing, trace: nothing, debug: nothing, info: nothing, warn: console.warn, error: console.error };
}

/**
 * Prebuilds the workflow bundles (`dist/workflow-bundle.js`, and `dist/workflow-bundle-traced.js`
 * with the tracing interceptors) so workers start without running webpack. Also the CI check
 * that workflow code bundles: a Node built-in or I/O import fails it.
 */
import { writeFileSync } from 'node:fs';
import { bundleWorkflowCode } from '@temporalio/worker';
import { tracedWorkflowBundlePath, tracedWorkflowInterceptorModules, workflowBundlePath, workflowsSourcePath } from '../worker/temporal-worker.js';

// The interceptors (temporal/workflow-tracing.ts) go in with the workflows: a prebuilt bundle cannot take them later.
for (const [file, workflowInterceptorModules] of [
  [workflowBundlePath, []],
  [tracedWorkflowBundlePath, tracedWorkflowInterceptorModules],
] as const) {
  const { code } = await bundleWorkflowCode({
    workflowsPath: workflowsSourcePath,
    workflowInterceptorModules: [...workflowInterceptorModules],
    logger: quietLogger(),
  });
  writeFileSync(file, code);
}

function quietLogger() {
  const nothing = () => undefined;
  return { log: nothing, trace: nothing, debug: nothing, info: nothing, warn: console.warn, error: console.error };
}

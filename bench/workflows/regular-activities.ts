/**
 * The reference of the wake-path measurement: the registration workflow itself with its claim
 * and send as regular activities (scheduled, started and completed through the task queue)
 * where it runs them as local ones. This module stands for `@temporalio/workflow` in the
 * reference's bundle of workflows/ (bench/measure/wake-path.ts bundles them with it): all of the
 * workflow API as it is, but `proxyLocalActivities` hands out regular activities with the same
 * time limits and retries (less `localRetryThreshold`, which only local activities have). So
 * the two sides run the same code, and their histories differ in the kind of activity only.
 *
 * Only bundled by the wake-path measurement, never by the worker process.
 */
import {
  proxyActivities,
  type LocalActivityInterfaceFor,
  type LocalActivityProxyOptions,
  type UntypedActivities,
} from '@temporalio/workflow/lib/index.js';

export * from '@temporalio/workflow/lib/index.js';

export function proxyLocalActivities<A = UntypedActivities>(options: LocalActivityProxyOptions<A>): LocalActivityInterfaceFor<A> {
  const { localRetryThreshold: _localOnly, ...regular } = options;
  // The same functions; only `executeWithOptions` (which the registration workflow does not call) would take other options.
  return proxyActivities<A>(regular) as unknown as LocalActivityInterfaceFor<A>;
}

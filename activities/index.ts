/**
 * Activities: all the I/O a workflow needs, built from the worker's dependencies. Workflows
 * type their proxies with `ReturnType<typeof createActivities>` and pass ids, never secrets.
 */
import type { DatabasePool } from '../src/db/pool.js';
import type { Logger } from '../src/log.js';

export interface ActivityDeps {
  readonly pool: DatabasePool;
  readonly log: Logger;
}

export function createActivities(_deps: ActivityDeps) {
  return {};
}

export type Activities = ReturnType<typeof createActivities>;

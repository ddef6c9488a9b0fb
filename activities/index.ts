/**
 * Activities: all the I/O a workflow needs, built from the worker's dependencies. Workflows
 * type their proxies with `ReturnType<typeof createActivities>` and pass ids, never secrets.
 */
import { createMaintenanceActivities, type MaintenanceActivityDeps } from './maintenance.js';
import { createRegistrationActivities, type RegistrationActivityDeps } from './registration.js';

export type ActivityDeps = RegistrationActivityDeps & MaintenanceActivityDeps;

export function createActivities(deps: ActivityDeps) {
  return { ...createRegistrationActivities(deps), ...createMaintenanceActivities(deps) };
}

export type Activities = ReturnType<typeof createActivities>;

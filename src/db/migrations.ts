/** Where the migration files live, relative to the repository root. */
import path from 'node:path';
import { projectRoot } from '../process/paths.js';
import { readMigrations, type Migration } from './migrate.js';

/** This service's own migrations: what production applies. */
export const serviceMigrationsDir = path.join(projectRoot, 'migrations');
/** The host stand-in schema (docs/design.md, Host tables): dev stack and tests only. */
export const hostStandInMigrationsDir = path.join(projectRoot, 'migrations', 'host');

export function serviceMigrations(options: { withHostStandIn: boolean }): Migration[] {
  return readMigrations(options.withHostStandIn ? [hostStandInMigrationsDir, serviceMigrationsDir] : [serviceMigrationsDir]);
}

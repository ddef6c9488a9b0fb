/**
 * The services one tier shares, started once by its global setup: PostgreSQL (fast, unsynced),
 * NATS with JetStream and Temporal (the dev server, or the real server with mTLS for the
 * cluster tier), on free ports under `.dev/test-<tier>-<pid>`, and a migrated template
 * database. Stopped and removed afterwards.
 */
import { rmSync } from 'node:fs';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { migrateUp } from '../../src/db/migrate.js';
import { serviceMigrations } from '../../src/db/migrations.js';
import { removeCluster } from '../../devstack/postgres.js';
import { ensureDatabase, startBackingServices, stopEverything, type TemporalEngine } from '../../devstack/services.js';
import { findBinaries } from '../../devstack/tools.js';
import { projectRoot } from '../../src/process/paths.js';
import { freePort } from '../../devstack/ports.js';
import { cleanStaleTestRuns } from './stale-runs.js';
import './provided.js';

export const templateDatabase = 'push_template';

export async function startSharedServices(project: TestProject, tier: string, temporal: TemporalEngine): Promise<() => Promise<void>> {
  const dir = path.join(projectRoot, '.dev', `test-${tier}-${process.pid}`);
  const binaries = findBinaries({});
  await cleanStaleTestRuns(binaries.pgBin);
  const stop = async () => {
    await stopEverything(dir, binaries.pgBin);
    removeCluster(dir);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const services = await startBackingServices({
      dir,
      binaries,
      ports: { postgres: await freePort(), nats: await freePort(), temporal: await freePort(), temporalUi: undefined },
      fast: true,
      temporal,
    });
    await ensureDatabase(services.postgres.url('postgres'), templateDatabase);
    await migrateUp(services.postgres.url(templateDatabase), serviceMigrations({ withHostStandIn: true }));
    project.provide('postgresAdminUrl', services.postgres.url('postgres'));
    project.provide('templateDatabase', templateDatabase);
    project.provide('natsUrl', services.natsUrl);
    project.provide('temporalAddress', services.temporalAddress);
    project.provide('temporalEnv', services.temporalEnv);
    project.provide('temporalTestServer', binaries.temporalTestServer);
    project.provide('temporalCli', binaries.temporal);
    project.provide('stackDir', dir);
  } catch (error) {
    await stop();
    throw error;
  }
  return stop;
}

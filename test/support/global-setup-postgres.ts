/**
 * The workflow tier: Temporal's time-skipping test server (started per test file by the SDK,
 * from the installed binary) plus a private PostgreSQL with a migrated template database, so
 * the workflow runs against the real claim SQL. The golang-migrate tier uses the PostgreSQL.
 */
import { rmSync } from 'node:fs';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { migrateUp } from '../../src/db/migrate.js';
import { serviceMigrations } from '../../src/db/migrations.js';
import { startPostgres, stopPostgres, removeCluster } from '../../devstack/postgres.js';
import { ensureDatabase } from '../../devstack/services.js';
import { findBinaries } from '../../devstack/tools.js';
import { projectRoot } from '../../src/process/paths.js';
import { freePort } from '../../devstack/ports.js';
import { cleanStaleTestRuns } from './stale-runs.js';
import './provided.js';

const templateDatabase = 'push_template';

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // One directory per tier using this setup (test-workflow-<pid>, test-golangmigrate-<pid>).
  const dir = path.join(projectRoot, '.dev', `test-${project.name.replace(/[^a-z]/g, '')}-${process.pid}`);
  const binaries = findBinaries({});
  await cleanStaleTestRuns(binaries.pgBin);
  const stop = async () => {
    await stopPostgres(binaries.pgBin, dir);
    removeCluster(dir);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const postgres = await startPostgres({ pgBin: binaries.pgBin, dir, port: await freePort(), fast: true });
    await ensureDatabase(postgres.url('postgres'), templateDatabase);
    await migrateUp(postgres.url(templateDatabase), serviceMigrations({ withHostStandIn: true }));
    project.provide('postgresAdminUrl', postgres.url('postgres'));
    project.provide('templateDatabase', templateDatabase);
    project.provide('temporalTestServer', binaries.temporalTestServer);
    project.provide('temporalCli', binaries.temporal);
  } catch (error) {
    await stop();
    throw error;
  }
  return stop;
}

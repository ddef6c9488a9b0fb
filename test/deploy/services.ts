/**
 * The deploy tier's own PostgreSQL, NATS (JetStream) and Temporal dev server, under
 * `.dev/test-deploy-<pid>` on free ports, as the integration tier's global setup starts
 * them (a run killed before `stop` is cleaned up by the next: test/support/stale-runs.ts).
 * The database is bare: the test creates the host's tables and roles itself.
 */
import { rmSync } from 'node:fs';
import path from 'node:path';
import { removeCluster } from '../../devstack/postgres.js';
import { ensureDatabase, startBackingServices, stopEverything } from '../../devstack/services.js';
import { findBinaries } from '../../devstack/tools.js';
import { projectRoot } from '../../src/process/paths.js';
import { freePort } from '../../devstack/ports.js';
import { cleanStaleTestRuns } from '../support/stale-runs.js';

export interface DeployServices {
  /** Superuser URL of an empty database of its own. */
  readonly databaseUrl: string;
  readonly natsUrl: string;
  readonly temporalAddress: string;
  /** The Temporal CLI, for the operator commands of docs/deployment.md. */
  readonly temporalCli: string;
  stop(): Promise<void>;
}

export async function startDeployServices(): Promise<DeployServices> {
  const dir = path.join(projectRoot, '.dev', `test-deploy-${process.pid}`);
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
    });
    await ensureDatabase(services.postgres.url('postgres'), 'zippchat');
    return {
      databaseUrl: services.postgres.url('zippchat'),
      natsUrl: services.natsUrl,
      temporalAddress: services.temporalAddress,
      temporalCli: binaries.temporal,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

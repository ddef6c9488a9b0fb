/**
 * The three backing services — PostgreSQL, NATS with JetStream, the Temporal dev server —
 * started and stopped together. Used by `make up`/`make dev` and by the test harness.
 */
import { sql } from 'slonik';
import { z } from 'zod';
import { createDatabasePool } from '../db/pool.js';
import { daemonNames, stopDaemon } from './daemons.js';
import { natsDaemon, startNats } from './nats.js';
import { startPostgres, stopPostgres, type PostgresCluster } from './postgres.js';
import { startTemporalDevServer, temporalDaemon } from './temporal.js';
import type { Binaries } from './tools.js';

export interface ServicePorts {
  readonly postgres: number;
  readonly nats: number;
  readonly temporal: number;
  /** `undefined`: no Web UI (tests). */
  readonly temporalUi: number | undefined;
}

export interface BackingServices {
  readonly postgres: PostgresCluster;
  readonly natsUrl: string;
  readonly temporalAddress: string;
  readonly temporalUiUrl: string | undefined;
}

export async function startBackingServices(options: {
  readonly dir: string;
  readonly binaries: Binaries;
  readonly ports: ServicePorts;
  readonly fast?: boolean;
}): Promise<BackingServices> {
  const { dir, binaries, ports } = options;
  const [postgres, natsUrl, temporalAddress] = await Promise.all([
    startPostgres({ pgBin: binaries.pgBin, dir, port: ports.postgres, fast: options.fast }),
    startNats({ natsServer: binaries.natsServer, dir, port: ports.nats }),
    startTemporalDevServer({ temporal: binaries.temporal, dir, port: ports.temporal, uiPort: ports.temporalUi }),
  ]);
  return {
    postgres,
    natsUrl,
    temporalAddress,
    temporalUiUrl: ports.temporalUi === undefined ? undefined : `http://127.0.0.1:${ports.temporalUi}`,
  };
}

/**
 * Stops every daemon recorded under `dir`: the apps together first (they drain into the
 * services), then the backing services together.
 */
export async function stopEverything(dir: string, pgBin: string): Promise<string[]> {
  const services = [temporalDaemon, natsDaemon];
  const apps = daemonNames(dir).filter((name) => !services.includes(name));
  const stopAll = async (names: readonly string[]) => (await Promise.all(names.map(async (name) => ((await stopDaemon(dir, name)) ? name : undefined)))).filter((n) => n !== undefined);
  const stopped = await stopAll(apps);
  stopped.push(...(await stopAll(services)));
  await stopPostgres(pgBin, dir);
  return stopped;
}

/** Creates `name` unless it exists (optionally as a copy of `template`). */
export async function ensureDatabase(adminUrl: string, name: string, template?: string): Promise<void> {
  const pool = await createDatabasePool(adminUrl, { maximumPoolSize: 1 });
  try {
    const exists = await pool.exists(sql.type(z.object({ exists: z.boolean() }))`SELECT 1 FROM pg_database WHERE datname = ${name}`);
    if (exists) return;
    const ident = sql.identifier([name]);
    await pool.query(
      template === undefined ? sql.unsafe`CREATE DATABASE ${ident}` : sql.unsafe`CREATE DATABASE ${ident} TEMPLATE ${sql.identifier([template])}`,
    );
  } finally {
    await pool.end();
  }
}

/**
 * The three backing services — PostgreSQL, NATS with JetStream, Temporal (the CLI's dev
 * server, or the real multi-service server with mTLS) — started and stopped together. Used by
 * `make up`/`make dev`, the benchmarks and the test harness.
 */
import { sql } from 'slonik';
import { z } from 'zod';
import { createDatabasePool } from '../src/db/pool.js';
import { daemonNames, stopDaemon } from './daemons.js';
import { natsDaemon, startNats } from './nats.js';
import { startPostgres, stopPostgres, type PostgresCluster } from './postgres.js';
import { startTemporalDevServer, temporalDaemon } from './temporal.js';
import { clientTls, startTemporalServer, temporalServerDaemon } from './temporal-server.js';
import { findTemporalServer, type Binaries } from './tools.js';

/** `dev-server`: `temporal server start-dev` (SQLite, plain TCP, Web UI). `server`: the real server (PostgreSQL, mTLS). */
export type TemporalEngine = 'dev-server' | 'server';

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
  /** What our processes need beyond TEMPORAL_ADDRESS: the TEMPORAL_TLS_* files for the real server. */
  readonly temporalEnv: Readonly<Record<string, string>>;
  /** SDK connection options for clients in this process (tests, tools). */
  readonly temporalConnection: { readonly address: string; readonly tls?: ReturnType<typeof clientTls> };
}

export async function startBackingServices(options: {
  readonly dir: string;
  readonly binaries: Binaries;
  readonly ports: ServicePorts;
  readonly fast?: boolean;
  readonly temporal?: TemporalEngine;
}): Promise<BackingServices> {
  const { dir, binaries, ports } = options;
  const startingPostgres = startPostgres({ pgBin: binaries.pgBin, dir, port: ports.postgres, fast: options.fast });
  const [postgres, natsUrl, temporal] = await Promise.all([
    startingPostgres,
    startNats({ natsServer: binaries.natsServer, dir, port: ports.nats }),
    options.temporal === 'server'
      ? startingPostgres.then(() => startRealTemporal(dir, ports))
      : startTemporalDevServer({ temporal: binaries.temporal, dir, port: ports.temporal, uiPort: ports.temporalUi }).then((address) => ({
          address,
          env: {},
          connection: { address },
          uiUrl: ports.temporalUi === undefined ? undefined : `http://127.0.0.1:${ports.temporalUi}`,
        })),
  ]);
  return {
    postgres,
    natsUrl,
    temporalAddress: temporal.address,
    temporalUiUrl: temporal.uiUrl,
    temporalEnv: temporal.env,
    temporalConnection: temporal.connection,
  };
}

/** The real server keeps its state in the stack's PostgreSQL; it has no Web UI of its own. */
async function startRealTemporal(dir: string, ports: ServicePorts) {
  const access = await startTemporalServer({
    binaries: findTemporalServer(),
    dir,
    postgres: { host: '127.0.0.1', port: ports.postgres, user: 'postgres' },
    port: ports.temporal,
  });
  return { address: access.address, env: access.env, connection: { address: access.address, tls: clientTls(access) }, uiUrl: undefined };
}

/**
 * Stops every daemon recorded under `dir`: the apps together first (they drain into the
 * services), then the backing services together.
 */
export async function stopEverything(dir: string, pgBin: string): Promise<string[]> {
  const services = [temporalDaemon, temporalServerDaemon, natsDaemon];
  const apps = daemonNames(dir).filter((name) => !services.includes(name));
  const stopAll = async (names: readonly string[]) =>
    (await Promise.all(names.map(async (name) => ((await stopDaemon(dir, name)) ? name : undefined)))).filter((n) => n !== undefined);
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

/**
 * PostgreSQL over TLS. A private cluster serves TLS with a certificate from a CA made
 * for this test; with `sslmode=verify-full&sslrootcert=…` in DATABASE_URL the migrate command
 * and the three processes connect (on the tier's real Temporal server with mTLS) and their
 * sessions are encrypted; with the root of another CA each stops at once with one line.
 */
import path from 'node:path';
import { sql } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDatabasePool } from '../../src/db/pool.js';
import { createCertificateAuthority } from '../../devstack/pki.js';
import { startPostgres, stopPostgres, removeCluster } from '../../devstack/postgres.js';
import { ensureDatabase } from '../../devstack/services.js';
import { findBinaries } from '../../devstack/tools.js';
import { runCli } from '../integration/stack/cli.js';
import { freePort } from '../../devstack/ports.js';
import { serviceEnv, startProcess, waitReady } from '../support/processes.js';

const binaries = findBinaries({});
let dir: string;
let goodUrl: string;
let wrongCaUrl: string;

beforeAll(async () => {
  dir = path.join(inject('stackDir'), 'postgres-tls');
  const ca = await createCertificateAuthority(path.join(dir, 'pki'), 'postgres');
  const other = await createCertificateAuthority(path.join(dir, 'pki-other'), 'other');
  const server = await ca.issue('postgres-server', { usage: 'server', dnsNames: ['localhost'], ips: ['127.0.0.1'] });
  const port = await freePort();
  await startPostgres({ pgBin: binaries.pgBin, dir, port, fast: true, tls: server });
  const url = (database: string, rootCert: string) => `postgres://postgres@127.0.0.1:${port}/${database}?sslmode=verify-full&sslrootcert=${rootCert}`;
  await ensureDatabase(url('postgres', ca.caFile), 'zippchat');
  goodUrl = url('zippchat', ca.caFile);
  wrongCaUrl = url('zippchat', other.caFile);
});

afterAll(async () => {
  await stopPostgres(binaries.pgBin, dir);
  removeCluster(dir);
});

describe('PostgreSQL over verify-full TLS', () => {
  it('the migrate command and api, worker and bridge connect, over encrypted sessions', async () => {
    const migrate = runCli('migrate', ['up', '--host-standin'], { DATABASE_URL: goodUrl });
    expect(await migrate.exit, migrate.output()).toBe(0);
    expect(migrate.output()).toMatch(/^migrate: applied .*000022.*; version \d+\n$/);

    const ports = { api: await freePort(), worker: await freePort(), bridge: await freePort() };
    const env = serviceEnv(goodUrl, {
      PORT: String(ports.api),
      WORKER_METRICS_PORT: String(ports.worker),
      BRIDGE_METRICS_PORT: String(ports.bridge),
      TEMPORAL_TASK_QUEUE: `pg-tls-${ports.api}`,
    });
    const processes = (['api', 'worker', 'bridge'] as const).map((name) => ({
      name,
      process: startProcess(name, { ...env, DATABASE_URL: `${goodUrl}&application_name=${name}` }),
      url: `http://127.0.0.1:${ports[name]}`,
    }));
    try {
      for (const { process, url } of processes) await waitReady(url, process, 90_000);
      const pool = await createDatabasePool(goodUrl, { maximumPoolSize: 1 });
      try {
        const sessions = await pool.any(sql.type(z.object({ application_name: z.string(), ssl: z.boolean() }))`
          SELECT DISTINCT a.application_name, s.ssl FROM pg_stat_activity a JOIN pg_stat_ssl s ON s.pid = a.pid
          WHERE a.application_name IN ('api', 'worker', 'bridge') ORDER BY 1`);
        expect(sessions).toEqual([
          { application_name: 'api', ssl: true },
          { application_name: 'bridge', ssl: true },
          { application_name: 'worker', ssl: true },
        ]);
      } finally {
        await pool.end();
      }
    } finally {
      for (const { name, process } of processes) expect(await process.stop(), `${name}:\n${process.output()}`).toBe(0);
    }
  });

  it('with the root of another CA, each stops at once with one line saying so', async () => {
    const reason = 'TLS to PostgreSQL failed: the server certificate is not signed by the CA in sslrootcert';
    const migrate = runCli('migrate', ['up'], { DATABASE_URL: wrongCaUrl });
    expect(await migrate.exit).toBe(1);
    expect(migrate.output()).toBe(`migrate: ${reason}\n`);
    for (const name of ['api', 'worker', 'bridge'] as const) {
      const started = startProcess(
        name,
        serviceEnv(wrongCaUrl, {
          PORT: String(await freePort()),
          WORKER_METRICS_PORT: String(await freePort()),
          BRIDGE_METRICS_PORT: String(await freePort()),
        }),
      );
      const code = await new Promise((resolve) => {
        started.child.once('exit', resolve);
        setTimeout(() => resolve('still running after 30 s'), 30_000).unref();
      });
      expect(code, started.output()).toBe(1);
      expect(started.output()).toBe(`${name}: ${reason}\n`);
    }
  });
});

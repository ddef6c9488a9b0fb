/**
 * The three processes start from their built entry points against the real services, report
 * ready, and stop gracefully on SIGTERM.
 */
import { createServer, connect, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { freePort } from '../../devstack/ports.js';
import { serviceEnv, startProcess, waitReady } from '../support/processes.js';
import { serviceVersion } from '../../src/version.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await freshDatabase();
});
afterAll(async () => {
  await db.drop();
});

describe('api, worker and bridge on real PostgreSQL, NATS and Temporal', () => {
  it('each reaches /readyz 200, then exits 0 on SIGTERM', async () => {
    const [apiPort, workerPort, bridgePort] = [await freePort(), await freePort(), await freePort()];
    const env = serviceEnv(db.url, {
      PORT: String(apiPort),
      WORKER_METRICS_PORT: String(workerPort),
      BRIDGE_METRICS_PORT: String(bridgePort),
      TEMPORAL_TASK_QUEUE: `processes-${apiPort}`,
    });
    const processes = {
      api: { process: startProcess('api', env), url: `http://127.0.0.1:${apiPort}` },
      worker: { process: startProcess('worker', env), url: `http://127.0.0.1:${workerPort}` },
      bridge: { process: startProcess('bridge', env), url: `http://127.0.0.1:${bridgePort}` },
    };
    try {
      for (const { process, url } of Object.values(processes)) await waitReady(url, process);
      const readiness = await (await fetch(`${processes.api.url}/readyz`)).json();
      expect(readiness).toEqual({ status: 'ready', checks: { postgres: 'ok', temporal: 'ok' } });
      expect(((await fetch(`${processes.bridge.url}/readyz`).then((r) => r.json())) as { checks: unknown }).checks).toEqual({
        postgres: 'ok',
        nats: 'ok',
        temporal: 'ok',
      });
      // Every process says which release it is.
      for (const { url } of Object.values(processes))
        expect(await (await fetch(`${url}/healthz`)).json()).toEqual({ status: 'ok', version: serviceVersion });
      const metrics = await (await fetch(`${processes.worker.url}/metrics`)).text();
      expect(metrics).toContain('process_cpu_user_seconds_total');
    } finally {
      for (const [name, { process }] of Object.entries(processes)) {
        const code = await process.stop();
        expect(code, `${name} exit code; output:\n${process.output()}`).toBe(0);
        expect(process.output()).toContain(`${name} stopped`);
      }
    }
  });

  it('the api starts and answers /healthz while Temporal is unreachable, says it is not ready, and turns ready when Temporal comes', async () => {
    const [port, temporalPort] = [await freePort(), await freePort()];
    const api = startProcess('api', serviceEnv(db.url, { PORT: String(port), TEMPORAL_ADDRESS: `127.0.0.1:${temporalPort}` }));
    let temporalArrives: Server | undefined;
    try {
      const url = `http://127.0.0.1:${port}`;
      const { waitFor } = await import('../../devstack/daemons.js');
      await waitFor('api /healthz', async () => (await fetch(`${url}/healthz`).catch(() => undefined))?.status === 200, 30_000);
      const response = await fetch(`${url}/readyz`);
      expect(response.status).toBe(503);
      expect(await response.json()).toEqual({ status: 'not_ready', checks: { postgres: 'ok', temporal: 'failing' } });

      // Temporal "comes up" at the configured address: a TCP relay to the real dev server.
      temporalArrives = await relay(temporalPort, inject('temporalAddress'));
      await waitFor('api /readyz 200', async () => (await fetch(`${url}/readyz`)).status === 200, 30_000);
    } finally {
      expect(await api.stop(), api.output()).toBe(0);
      temporalArrives?.close();
    }
  });
});

/** Listens on `port` and pipes every connection to `target` (host:port). */
async function relay(port: number, target: string): Promise<Server> {
  const [host, targetPort] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))];
  const server = createServer((client) => {
    const upstream = connect(targetPort, host);
    client.pipe(upstream).pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, '127.0.0.1', resolve));
  server.unref();
  return server;
}

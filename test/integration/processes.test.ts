/**
 * The three processes start from their built entry points against the real services, report
 * ready, and stop gracefully on SIGTERM. A worker whose Temporal worker stops polling does not
 * live on: it exits 1, so that its pod is restarted.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, connect, type Server } from 'node:net';
import { Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { freePort } from '../../devstack/ports.js';
import { nonJsonLines, serviceEnv, startProcess, waitReady } from '../support/processes.js';
import { serviceVersion } from '../../src/process/version.js';

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

describe('a process whose essential loop ends', () => {
  it('the worker exits 1 when its Temporal worker stops polling (its namespace deleted), saying why, in JSON lines only', async () => {
    const { waitFor } = await import('../../devstack/daemons.js');
    const connection = await Connection.connect({ address: inject('temporalAddress') });
    const namespace = `ended-${randomBytes(4).toString('hex')}`;
    const port = await freePort();
    let worker: ReturnType<typeof startProcess> | undefined;
    try {
      temporalCli(['operator', 'namespace', 'create', '--namespace', namespace, '--retention', '24h']);
      await waitFor(
        `namespace ${namespace}`,
        () =>
          connection.workflowService.describeNamespace({ namespace }).then(
            () => true,
            () => false,
          ),
        30_000,
      );
      worker = startProcess('worker', serviceEnv(db.url, { WORKER_METRICS_PORT: String(port), TEMPORAL_NAMESPACE: namespace }));
      await waitReady(`http://127.0.0.1:${port}`, worker);
      const exited = new Promise<number | null>((resolve) => worker!.child.once('exit', resolve));

      // Polls for a namespace that is gone fail for good: the SDK stops the Temporal worker.
      temporalCli(['operator', 'namespace', 'delete', '--namespace', namespace, '--yes']);
      // Open long polls end first (up to a minute on the dev server): the bound is generous.
      let timer: NodeJS.Timeout | undefined;
      const code = await Promise.race([
        exited,
        new Promise<'still running'>((resolve) => (timer = setTimeout(() => resolve('still running'), 180_000))),
      ]);
      clearTimeout(timer);
      expect(code, worker.output()).toBe(1);
      expect(nonJsonLines(worker.output()), 'every line the worker wrote is JSON').toEqual([]);
      const lines = worker.output().trim().split('\n');
      const fatal = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.level === 'fatal');
      expect(fatal?.msg).toMatch(/^worker cannot go on: the Temporal worker (ended|failed|is FAILED)/);
      // It stopped what it opened within its deadline, rather than being cut off by it.
      expect(worker.output(), worker.output()).toContain('worker stopped');
    } finally {
      if (worker?.child.exitCode === null) await worker.stop('SIGKILL');
      await connection.close();
    }
  }, 240_000);
});

function temporalCli(args: readonly string[]): void {
  const result = spawnSync(inject('temporalCli'), [...args, '--address', inject('temporalAddress')], { encoding: 'utf8', timeout: 60_000 });
  if (result.status !== 0) throw new Error(`temporal ${args.join(' ')}: ${result.stderr || result.stdout}`);
}

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

/**
 * The three built processes (api, worker, bridge) as production runs them, on a NATS of their
 * own: no other test file's bridge shares the stream, so what they report is this file's alone.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'vitest';
import { stopDaemon } from '../../devstack/daemons.js';
import { natsDaemon, startNats } from '../../devstack/nats.js';
import { freePort } from '../../devstack/ports.js';
import { findBinaries } from '../../devstack/tools.js';
import { serviceEnv, startProcess, waitReady, type RunningProcess } from './processes.js';

export type ProcessName = 'api' | 'worker' | 'bridge';

export interface OwnNatsProduct {
  readonly natsUrl: string;
  /** Each process's HTTP base URL (the api's port, the worker's and the bridge's metrics ports). */
  readonly urls: Readonly<Record<ProcessName, string>>;
  readonly processes: ReadonlyArray<{ readonly name: ProcessName; readonly process: RunningProcess }>;
  /** Stops the processes, expecting each to exit 0, then the NATS server. */
  stop(): Promise<void>;
}

/** Starts NATS, then the three processes with `env` added to the service environment; returns once each is ready. */
export async function startOwnNatsProduct(databaseUrl: string, label: string, env: Record<string, string> = {}): Promise<OwnNatsProduct> {
  const natsDir = mkdtempSync(path.join(tmpdir(), `${label}-nats-`));
  const natsUrl = await startNats({ natsServer: findBinaries({}).natsServer, dir: natsDir, port: await freePort() });
  const [api, worker, bridge] = [await freePort(), await freePort(), await freePort()];
  const urls = { api: `http://127.0.0.1:${api}`, worker: `http://127.0.0.1:${worker}`, bridge: `http://127.0.0.1:${bridge}` };
  const full = serviceEnv(databaseUrl, {
    PORT: String(api),
    WORKER_METRICS_PORT: String(worker),
    BRIDGE_METRICS_PORT: String(bridge),
    NATS_URL: natsUrl,
    TEMPORAL_TASK_QUEUE: `${label}-${api}`,
    PUSH_UP_ALLOW_PRIVATE: 'true',
    PUSH_UP_ALLOW_HTTP: 'true',
    ...env,
  });
  const processes = (['api', 'worker', 'bridge'] as const).map((name) => ({ name, process: startProcess(name, full) }));
  const stop = async () => {
    for (const { name, process } of processes) expect(await process.stop(), `${name}: ${process.output()}`).toBe(0);
    await stopDaemon(natsDir, natsDaemon);
    rmSync(natsDir, { recursive: true, force: true });
  };
  try {
    for (const { name, process } of processes) await waitReady(urls[name], process);
  } catch (error) {
    for (const { process } of processes) await process.stop();
    await stopDaemon(natsDir, natsDaemon);
    throw error;
  }
  return { natsUrl, urls, processes, stop };
}

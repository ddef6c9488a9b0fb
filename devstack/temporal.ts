/**
 * The Temporal CLI dev server with its Web UI, state in a SQLite file under the stack's dir
 * (so workflow histories survive a restart), and the custom search attributes (docs/design.md, Temporal).
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { customSearchAttributes } from '../temporal/names.js';
import { startDaemon, waitFor } from './daemons.js';

export interface TemporalDevOptions {
  readonly temporal: string;
  readonly dir: string;
  readonly port: number;
  /** Web UI port; `undefined` runs headless (tests). */
  readonly uiPort: number | undefined;
  readonly namespace?: string;
  /** Partitions of every task queue (default 1: what docs/operations.md asks of a production server for ours). */
  readonly taskQueuePartitions?: number;
}

export const temporalDaemon = 'temporal';

export async function startTemporalDevServer(options: TemporalDevOptions): Promise<string> {
  const stateDir = path.join(options.dir, 'temporal');
  mkdirSync(stateDir, { recursive: true });
  const searchAttributes = Object.entries(customSearchAttributes).flatMap(([name, type]) => ['--search-attribute', `${name}=${type}`]);
  const namespace = options.namespace ?? 'default';
  startDaemon(options.dir, {
    name: temporalDaemon,
    command: options.temporal,
    args: [
      'server',
      'start-dev',
      '--ip',
      '127.0.0.1',
      '--port',
      String(options.port),
      ...(options.uiPort === undefined ? ['--headless'] : ['--ui-port', String(options.uiPort), '--ui-ip', '127.0.0.1', '--ui-disable-news-fetch']),
      '--db-filename',
      path.join(stateDir, 'temporal.sqlite'),
      '--sqlite-pragma',
      'journal_mode=WAL',
      '--sqlite-pragma',
      'synchronous=OFF',
      '--log-level',
      'warn',
      ...(namespace === 'default' ? [] : ['--namespace', namespace]),
      ...taskQueuePartitionFlags(options.taskQueuePartitions ?? 1),
      ...searchAttributes,
    ],
  });
  const address = `127.0.0.1:${options.port}`;
  await waitFor(`Temporal dev server on ${address}`, () => temporalReady(address, namespace), 60_000);
  return address;
}

/**
 * One partition serves a task queue in order, as the pacing's promise to DMs needs
 * (docs/operations.md, "Temporal server settings"); the server's default is 4.
 */
function taskQueuePartitionFlags(partitions: number): string[] {
  return ['Write', 'Read'].flatMap((kind) => ['--dynamic-config-value', `matching.numTaskqueue${kind}Partitions=${partitions}`]);
}

/** Ready = the namespace answers and lists our search attributes. */
async function temporalReady(address: string, namespace: string): Promise<boolean> {
  const connection = await Connection.connect({ address, connectTimeout: 1_000 });
  try {
    const response = await connection.operatorService.listSearchAttributes({ namespace });
    return Object.keys(customSearchAttributes).every((name) => name in (response.customAttributes ?? {}));
  } finally {
    await connection.close();
  }
}

/**
 * Temporal client for the api and the bridge. The connection is lazy: the api must start and
 * take registrations while Temporal is unreachable (PostgreSQL holds the truth; the bridge's
 * signal-with-start creates missing workflows later), and it reconnects by itself.
 */
import { Client, Connection } from '@temporalio/client';

export interface TemporalClientOptions {
  readonly address: string;
  readonly namespace: string;
}

export interface TemporalHandle {
  readonly client: Client;
  readonly connection: Connection;
  /** Throws unless the frontend answers within `timeoutMs`. */
  check(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export function createTemporalClient(options: TemporalClientOptions): TemporalHandle {
  const connection = Connection.lazy({ address: options.address, connectTimeout: 5_000 });
  const client = new Client({ connection, namespace: options.namespace });
  return {
    client,
    connection,
    async check(timeoutMs = 2_000) {
      await connection.ensureConnected();
      await connection.withDeadline(Date.now() + timeoutMs, () =>
        connection.workflowService.describeNamespace({ namespace: options.namespace }),
      );
    },
    close: () => connection.close(),
  };
}

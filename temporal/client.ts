/**
 * Temporal client for the api, the bridge and the worker. The connection is lazy: the api must
 * start and take registrations while Temporal is unreachable (PostgreSQL holds the truth; the
 * bridge's signal-with-start creates missing workflows later), and it reconnects by itself.
 */
import { Client, Connection } from '@temporalio/client';
import type { TemporalSettings } from '../src/config/index.js';
import { explainTemporalFailure, temporalConnectionOptions } from './connection.js';
import { tracedClientInterceptor } from './tracing.js';

export type TemporalClientOptions = Pick<TemporalSettings, 'address' | 'namespace' | 'tls' | 'apiKey'>;

export interface TemporalHandle {
  readonly client: Client;
  readonly connection: Connection;
  /**
   * Runs `call` under a gRPC deadline of `timeoutMs`. Callers may stop waiting sooner; `close()`
   * still waits for the call to settle (see there).
   */
  withDeadline<T>(timeoutMs: number, call: () => Promise<T>): Promise<T>;
  /** Throws unless the frontend answers within `timeoutMs`. */
  check(timeoutMs?: number): Promise<void>;
  /** Waits for calls made through `withDeadline`/`check`, then closes the connection. */
  close(): Promise<void>;
}

export function createTemporalClient(options: TemporalClientOptions): TemporalHandle {
  const connection = Connection.lazy({ ...temporalConnectionOptions(options), connectTimeout: 5_000 });
  // Calls made inside a recording span carry its trace to the workflow (temporal/tracing.ts).
  const client = new Client({ connection, namespace: options.namespace, interceptors: { workflow: [tracedClientInterceptor()] } });
  const inFlight = new Set<Promise<unknown>>();

  const withDeadline = <T>(timeoutMs: number, call: () => Promise<T>): Promise<T> => {
    const attempt = connection.withDeadline(Date.now() + timeoutMs, call);
    const settled = attempt.then(
      () => undefined,
      () => undefined,
    );
    inFlight.add(settled);
    void settled.finally(() => inFlight.delete(settled));
    return attempt;
  };

  return {
    client,
    connection,
    withDeadline,
    // Not `ensureConnected()`: it memoizes its first failure, so a process started before
    // Temporal would never turn ready. A plain call connects (or reconnects) on demand.
    check: (timeoutMs = 2_000) =>
      withDeadline(timeoutMs, async () => {
        await connection.workflowService.describeNamespace({ namespace: options.namespace });
      }).catch(async (error: unknown) => {
        throw new Error(await explainTemporalFailure(error, temporalConnectionOptions(options)));
      }),
    async close() {
      // The SDK retries an unavailable server from a timer, bounded by the deadline; closing
      // the channel under a pending retry makes that timer throw where nobody can catch it.
      await Promise.all([...inFlight]);
      await connection.close();
    },
  };
}

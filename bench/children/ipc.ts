/**
 * The benchmark's helper processes (a worker of trivial workflows, a direct wake sender, a
 * bare drain handler) are forked with an IPC channel and answer calls over it. A helper exits
 * when its parent goes away, so a killed benchmark leaves none behind.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { openSync, closeSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../src/testing.js';

type Handler = (params: unknown) => Promise<unknown>;

interface Request {
  readonly id: number;
  readonly method: string;
  readonly params: unknown;
}

type Reply = { readonly id: number; readonly result: unknown } | { readonly id: number; readonly error: string };

/** In the helper: answers the parent's calls; `stop` (if given) runs before exiting on `exit`. */
export function serveParent(handlers: Readonly<Record<string, Handler>>): void {
  if (process.send === undefined) throw new Error('a bench helper must be forked with an IPC channel');
  const send = (reply: Reply) => process.send?.(reply);
  process.on('message', (message: Request) => {
    const handler = handlers[message.method];
    if (handler === undefined) return void send({ id: message.id, error: `unknown method ${message.method}` });
    handler(message.params).then(
      (result) => send({ id: message.id, result: result ?? null }),
      (error: unknown) => send({ id: message.id, error: error instanceof Error ? (error.stack ?? error.message) : String(error) }),
    );
  });
  // The parent is gone (finished, crashed or killed): nothing to serve any more.
  process.on('disconnect', () => process.exit(0));
}

export interface Helper {
  readonly pid: number;
  call<T>(method: string, params?: unknown): Promise<T>;
  /** Calls `stop` if the helper has one, then disconnects; SIGKILL if it has not exited in time. */
  stop(): Promise<void>;
}

/** Forks `dist-tools/bench/children/<name>.js`, its output appended to `<dir>/logs/<name>.log`. */
export function forkHelper(dir: string, name: string): Helper {
  mkdirSync(path.join(dir, 'logs'), { recursive: true });
  const log = openSync(path.join(dir, 'logs', `${name}.log`), 'a');
  let child: ChildProcess;
  try {
    child = fork(path.join(projectRoot, 'dist-tools', 'bench', 'children', `${name}.js`), [], {
      stdio: ['ignore', log, log, 'ipc'],
      cwd: projectRoot,
    });
  } finally {
    closeSync(log);
  }
  const pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  let nextId = 0;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.on('message', (reply: Reply) => {
    const waiter = pending.get(reply.id);
    if (waiter === undefined) return;
    pending.delete(reply.id);
    if ('error' in reply) waiter.reject(new Error(`${name}: ${reply.error}`));
    else waiter.resolve(reply.result);
  });
  child.once('exit', (code) => {
    for (const waiter of pending.values()) waiter.reject(new Error(`${name} exited (${code}) during a call`));
    pending.clear();
  });
  return {
    pid: child.pid ?? -1,
    call<T>(method: string, params?: unknown): Promise<T> {
      if (!child.connected) return Promise.reject(new Error(`${name} is not running`));
      const id = nextId++;
      return new Promise<T>((resolve, reject) => {
        pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
        child.send({ id, method, params } satisfies Request);
      });
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      if (child.connected) {
        await this.call('stop').catch(() => undefined);
        child.disconnect();
      }
      const killed = setTimeout(() => child.kill('SIGKILL'), 20_000);
      await exited;
      clearTimeout(killed);
    },
  };
}

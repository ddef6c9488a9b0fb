/**
 * A private PostgreSQL cluster for development and tests: its own data directory, port and
 * socket directory under the stack's dir. initdb and postgres refuse to run as root, so when
 * we are root the cluster is owned and run by the unprivileged `postgres` user — which may not
 * reach into the stack's dir (a clone in a private 0700 temp dir, say): then the cluster's
 * files live in a directory of their own under the system temp dir, linked from
 * `<dir>/postgres`, and `removeCluster` deletes them with the stack.
 */
import { execFile } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface PostgresOptions {
  readonly pgBin: string;
  /** The cluster lives in `<dir>/postgres`. */
  readonly dir: string;
  readonly port: number;
  /** Trade durability for speed (tests): fsync and synchronous commit off. */
  readonly fast?: boolean;
  /** Serve TLS with this certificate and key (copied next to the data, owned by the server's user). */
  readonly tls?: { readonly certFile: string; readonly keyFile: string };
}

export interface PostgresCluster {
  /** Connection string of the `postgres` superuser to database `database`. */
  url(database: string): string;
  stop(): Promise<void>;
}

export function clusterDir(dir: string): string {
  return path.join(dir, 'postgres');
}

/** Where the cluster's files are: `<dir>/postgres`, or what that links to (see above). */
function clusterRoot(dir: string): string {
  const link = clusterDir(dir);
  return existsSync(link) ? realpathSync(link) : link;
}

function createClusterRoot(dir: string, owner: Owner | undefined): string {
  const link = clusterDir(dir);
  if (owner === undefined || existsSync(link)) return clusterRoot(dir);
  mkdirSync(path.dirname(link), { recursive: true });
  const real = mkdtempSync(path.join(os.tmpdir(), 'zippchat-pg-'));
  symlinkSync(real, link);
  return real;
}

/** Deletes the cluster's files when they live outside `dir` (the caller deletes `dir`). */
export function removeCluster(dir: string): void {
  const link = clusterDir(dir);
  if (existsSync(link) && lstatSync(link).isSymbolicLink()) rmSync(realpathSync(link), { recursive: true, force: true });
}

export async function startPostgres(options: PostgresOptions): Promise<PostgresCluster> {
  const owner = unprivilegedOwner();
  const root = createClusterRoot(options.dir, owner);
  const data = path.join(root, 'data');
  const socket = path.join(root, 'socket');
  for (const d of [root, socket]) {
    mkdirSync(d, { recursive: true });
    if (owner !== undefined) chownSync(d, owner.uid, owner.gid);
  }
  const asOwner = (program: string, args: string[]) =>
    owner === undefined
      ? run(path.join(options.pgBin, program), args)
      : run('runuser', ['-u', owner.name, '--', path.join(options.pgBin, program), ...args]);

  if (!existsSync(path.join(data, 'PG_VERSION'))) {
    await asOwner('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--no-locale', '--no-sync']);
  }
  const settings = [
    `-p ${options.port}`,
    `-k ${socket}`,
    `-c listen_addresses=127.0.0.1`,
    `-c max_connections=300`,
    ...(options.fast ? ['-c fsync=off', '-c synchronous_commit=off', '-c full_page_writes=off'] : []),
    ...(options.tls === undefined ? [] : tlsSettings(root, options.tls, owner)),
  ].join(' ');
  const status = await asOwner('pg_ctl', ['-D', data, 'status']).then(
    () => 'running',
    () => 'stopped',
  );
  if (status === 'stopped') {
    await asOwner('pg_ctl', ['-D', data, '-l', path.join(root, 'postgres.log'), '-w', '-t', '60', '-o', settings, 'start']);
  }
  return {
    url: (database) => `postgres://postgres@127.0.0.1:${options.port}/${database}`,
    stop: async () => {
      await asOwner('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']).catch(() => undefined);
    },
  };
}

/** Stops a cluster started earlier (possibly by another process). */
export async function stopPostgres(pgBin: string, dir: string): Promise<void> {
  const data = path.join(clusterRoot(dir), 'data');
  if (!existsSync(path.join(data, 'postmaster.pid'))) return;
  const owner = unprivilegedOwner();
  const pgCtl = path.join(pgBin, 'pg_ctl');
  const args = ['-D', data, '-m', 'fast', '-w', 'stop'];
  await (owner === undefined ? run(pgCtl, args) : run('runuser', ['-u', owner.name, '--', pgCtl, ...args])).catch(() => undefined);
}

/** PostgreSQL refuses a key file others can read: copies both files into the cluster's root, mode 0600. */
function tlsSettings(root: string, tls: { certFile: string; keyFile: string }, owner: Owner | undefined): string[] {
  const cert = path.join(root, 'server.crt');
  const key = path.join(root, 'server.key');
  copyFileSync(tls.certFile, cert);
  copyFileSync(tls.keyFile, key);
  for (const file of [cert, key]) {
    chmodSync(file, 0o600);
    if (owner !== undefined) chownSync(file, owner.uid, owner.gid);
  }
  return ['-c ssl=on', `-c ssl_cert_file=${cert}`, `-c ssl_key_file=${key}`];
}

interface Owner {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
}

function unprivilegedOwner(): Owner | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  if (line === undefined) throw new Error('running as root needs a `postgres` user to own the dev cluster');
  const [name, , uid, gid] = line.split(':');
  return { name: name!, uid: Number(uid), gid: Number(gid) };
}

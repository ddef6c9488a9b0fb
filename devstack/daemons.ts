/**
 * Background processes of the dev stack, tracked by pid files under `<dir>/run` so that
 * `make down` (another process) can stop exactly what `make up` started and nothing else.
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface DaemonSpec {
  readonly name: string;
  readonly command: string;
  readonly args: readonly string[];
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly cwd?: string;
}

export function runDir(dir: string): string {
  return path.join(dir, 'run');
}

export function logDir(dir: string): string {
  return path.join(dir, 'logs');
}

export function logFile(dir: string, name: string): string {
  return path.join(logDir(dir), `${name}.log`);
}

/**
 * Starts `spec` detached, stdout/stderr appended to `<dir>/logs/<name>.log`, and returns its
 * pid — or the pid of the copy already running, so that `make up` twice is harmless.
 */
export function startDaemon(dir: string, spec: DaemonSpec): number {
  mkdirSync(runDir(dir), { recursive: true });
  mkdirSync(logDir(dir), { recursive: true });
  const existing = daemonPid(dir, spec.name);
  if (existing !== undefined) return existing;
  const log = openSync(logFile(dir, spec.name), 'a');
  try {
    const child = spawn(spec.command, [...spec.args], {
      detached: true,
      stdio: ['ignore', log, log],
      env: spec.env as NodeJS.ProcessEnv | undefined,
      cwd: spec.cwd,
    });
    if (child.pid === undefined) throw new Error(`could not start ${spec.command}`);
    child.unref();
    writePid(dir, spec.name, child.pid);
    return child.pid;
  } finally {
    closeSync(log);
  }
}

function writePid(dir: string, name: string, pid: number): void {
  writeFileSync(path.join(runDir(dir), `${name}.pid`), `${pid}\n`);
}

/** The pid of a running daemon, or undefined (a stale pid file is removed). */
export function daemonPid(dir: string, name: string): number | undefined {
  const file = path.join(runDir(dir), `${name}.pid`);
  if (!existsSync(file)) return undefined;
  const pid = Number(readFileSync(file, 'utf8').trim());
  if (Number.isInteger(pid) && pid > 0 && isAlive(pid)) return pid;
  rmSync(file, { force: true });
  return undefined;
}

export function daemonNames(dir: string): string[] {
  if (!existsSync(runDir(dir))) return [];
  return readdirSync(runDir(dir))
    .filter((f) => f.endsWith('.pid'))
    .map((f) => f.slice(0, -'.pid'.length));
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** SIGTERM to the daemon's process group, then SIGKILL after `graceMs`. */
export async function stopDaemon(dir: string, name: string, graceMs = 15_000): Promise<boolean> {
  const pid = daemonPid(dir, name);
  if (pid === undefined) return false;
  signalGroup(pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (isAlive(pid) && Date.now() < deadline) await sleep(100);
  if (isAlive(pid)) signalGroup(pid, 'SIGKILL');
  while (isAlive(pid)) await sleep(50);
  rmSync(path.join(runDir(dir), `${name}.pid`), { force: true });
  return true;
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal); // detached ⇒ the child leads its own process group
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      /* already gone */
    }
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `probe` until it resolves truthy; rejects with the last error after `timeoutMs`. */
export async function waitFor<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs: number, intervalMs = 200): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const result = await probe();
      if (result !== undefined && result !== false) return result;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) {
      const reason = lastError instanceof Error ? `: ${lastError.message}` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${reason}`);
    }
    await sleep(intervalMs);
  }
}

/** A daemon just started, and how to tell that it is ready. */
export interface Starting {
  readonly name: string;
  readonly pid: number;
  /** The size of its log before it started: what follows is this run's output. */
  readonly logFrom: number;
  /** Where to look for more, in the messages. */
  readonly what: string;
  ready(): Promise<boolean>;
}

/** The size of a daemon's log now (0 when there is none yet): pass it to `waitUntilReady`. */
export function logSize(dir: string, name: string): number {
  const file = logFile(dir, name);
  return existsSync(file) ? statSync(file).size : 0;
}

/**
 * Waits until every daemon is ready. A daemon that exits meanwhile ends the wait at once, with
 * what it wrote since it started — a process that refuses its settings exits at start with one
 * line saying why, and would otherwise be polled for readiness until the deadline.
 */
export async function waitUntilReady(dir: string, daemons: readonly Starting[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const waiting = new Set(daemons);
  while (waiting.size > 0) {
    for (const daemon of daemons) {
      if (!isAlive(daemon.pid)) throw new Error(`${daemon.name} exited while starting: ${outputSince(dir, daemon)}`);
    }
    for (const daemon of [...waiting]) if (await daemon.ready().catch(() => false)) waiting.delete(daemon);
    if (waiting.size === 0) return;
    if (Date.now() > deadline) {
      const late = [...waiting];
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${late.map((d) => d.what).join(', ')}`);
    }
    await sleep(200);
  }
}

/** The last lines a daemon wrote since `logFrom` (its one line, for a process that refused to start), and where its log is. */
function outputSince(dir: string, daemon: Starting, maxLines = 20): string {
  const file = logFile(dir, daemon.name);
  let text = '';
  if (existsSync(file)) {
    const size = statSync(file).size;
    const buffer = Buffer.alloc(Math.max(0, size - daemon.logFrom));
    const fd = openSync(file, 'r');
    try {
      readSync(fd, buffer, 0, buffer.length, daemon.logFrom);
    } finally {
      closeSync(fd);
    }
    text = buffer.toString('utf8');
  }
  const lines = text.split('\n').filter((line) => line.trim() !== '');
  const said = lines.length === 0 ? 'it wrote nothing' : lines.slice(-maxLines).join('\n');
  return `${said}\n(log: ${file})`;
}

/**
 * Finds the native programs the dev stack and the tests run. Nothing is downloaded here:
 * `tools/install.sh` (run by every make target) and `tools/go-tools.sh` (`make test`) install
 * them beforehand.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { DevStackConfig } from './config.js';
import type { TemporalServerBinaries } from './temporal-server.js';
import { projectRoot } from '../src/process/paths.js';

export interface Binaries {
  readonly temporal: string;
  readonly temporalTestServer: string;
  readonly natsServer: string;
  /** Directory holding initdb, pg_ctl and postgres. */
  readonly pgBin: string;
}

/**
 * The real Temporal server and its SQL schema tool, built from their Go module into .tools/bin
 * by tools/go-tools.sh (only needed when a stack runs the real server: DEV_TEMPORAL=server, the
 * cluster tier), and the schemas, which ship in that module's source in Go's module cache.
 */
export function findTemporalServer(): TemporalServerBinaries {
  const server = findGoTool('temporal-server');
  const sqlTool = findGoTool('temporal-sql-tool');
  const line = readFileSync(path.join(projectRoot, 'tools', 'go-tools.txt'), 'utf8')
    .split('\n')
    .find((l) => l.startsWith('temporal-server '));
  const version = /@(v[\w.-]+)/.exec(line ?? '')?.[1];
  if (version === undefined) throw new Error('tools/go-tools.txt names no temporal-server version');
  const moduleCache = execFileSync('go', ['env', 'GOMODCACHE'], { encoding: 'utf8' }).trim();
  const schemaDir = path.join(moduleCache, `go.temporal.io/server@${version}`, 'schema', 'postgresql', 'v12');
  if (!existsSync(schemaDir))
    throw new Error(`${schemaDir} not found: run tools/go-tools.sh (make test does), which fetches the Temporal server module`);
  return { server, sqlTool, schemaDir };
}

export function findBinaries(binaries: DevStackConfig['binaries']): Binaries {
  return {
    temporal: binaries.temporal ?? findProgram('temporal'),
    temporalTestServer: binaries.temporalTestServer ?? findProgram('temporal-test-server'),
    natsServer: binaries.natsServer ?? findProgram('nats-server'),
    pgBin: binaries.pgBin ?? findPgBin(),
  };
}

/** The pinned copy in `.tools/venv/bin` first, then PATH. */
function findProgram(name: string): string {
  const candidates = [path.join(projectRoot, '.tools', 'venv', 'bin', name), ...pathDirs().map((d) => path.join(d, name))];
  const found = candidates.find((c) => existsSync(c));
  if (found === undefined) throw new Error(`${name} not found: run tools/install.sh (make does) or put it on PATH`);
  return found;
}

/**
 * A program of tools/go-tools.txt, built by tools/go-tools.sh into `.tools/bin`. Never taken
 * from PATH: the tests that use one hold the project to that pinned version.
 */
export function findGoTool(name: string): string {
  const file = path.join(projectRoot, '.tools', 'bin', name);
  if (!existsSync(file)) throw new Error(`${name} not found in .tools/bin: run tools/go-tools.sh (make test does)`);
  return file;
}

function findPgBin(): string {
  const onPath = pathDirs().find((d) => existsSync(path.join(d, 'pg_ctl')) && existsSync(path.join(d, 'initdb')));
  if (onPath !== undefined) return onPath;
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => existsSync(path.join(root, v, 'bin', 'pg_ctl')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions[0] === undefined) throw new Error('PostgreSQL server binaries not found: install them or set PG_BIN');
  return path.join(root, versions[0], 'bin');
}

function pathDirs(): string[] {
  // eslint-disable-next-line no-restricted-syntax -- PATH lookup is the one env read the tool finder needs
  return (process.env.PATH ?? '').split(path.delimiter).filter((d) => d !== '');
}

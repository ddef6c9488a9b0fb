/**
 * The real Temporal server (`go.temporal.io/server`, the services a production cluster runs)
 * as a development and test target: PostgreSQL persistence and SQL visibility in the stack's
 * private PostgreSQL, schemas set up with `temporal-sql-tool`, the custom search attributes
 * (docs/design.md, Temporal) registered, and the frontend on TLS with client certificates required (a CA
 * and certificates generated for the stack). The dev server (temporal.ts) is lighter; this one
 * is what production runs, so tests on it prove what the dev server cannot.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common';
import protos from '@temporalio/proto';
import { customSearchAttributes } from '../temporal/names.js';
import { startDaemon, waitFor } from './daemons.js';
import { createCertificateAuthority, type IssuedCertificate } from './pki.js';
import { freePortBelow } from './ports.js';

const run = promisify(execFile);

export const temporalServerDaemon = 'temporal-server';

export interface TemporalServerBinaries {
  /** `go.temporal.io/server/cmd/server`. */
  readonly server: string;
  /** `go.temporal.io/server/cmd/tools/sql`. */
  readonly sqlTool: string;
  /** The server module's `schema/postgresql/v12` directory. */
  readonly schemaDir: string;
}

export interface TemporalServerOptions {
  readonly binaries: TemporalServerBinaries;
  readonly dir: string;
  /** The stack's PostgreSQL (superuser, trust authentication on loopback). */
  readonly postgres: { readonly host: string; readonly port: number; readonly user: string };
  /** Frontend gRPC port; other ports are chosen below 32768 (membership ports are smallints in PostgreSQL). */
  readonly port: number;
  readonly namespace?: string;
}

/** What a client needs: the frontend and the TLS files it needs. */
export interface TemporalServerAccess {
  readonly address: string;
  readonly caFile: string;
  /** A client certificate the frontend accepts. */
  readonly client: IssuedCertificate;
  /** TEMPORAL_TLS_* variables for our processes. */
  readonly env: Readonly<Record<string, string>>;
}

export async function startTemporalServer(options: TemporalServerOptions): Promise<TemporalServerAccess> {
  const home = path.join(options.dir, 'temporal-server');
  mkdirSync(home, { recursive: true });
  const pki = await certificates(home);
  const configFile = path.join(home, 'config.yaml');
  if (!existsSync(configFile)) {
    const ports = await serverPorts(options.port);
    writeFileSync(path.join(home, 'dynamicconfig.yaml'), dynamicConfig);
    writeFileSync(configFile, serverConfig(options, ports, pki, path.join(home, 'dynamicconfig.yaml')));
  }
  await setUpSchemas(options, home);
  startDaemon(options.dir, {
    name: temporalServerDaemon,
    command: options.binaries.server,
    args: ['--config-file', configFile, '--allow-no-auth', 'start'],
  });
  const address = `127.0.0.1:${options.port}`;
  const access: TemporalServerAccess = {
    address,
    caFile: pki.caFile,
    client: pki.client,
    env: {
      TEMPORAL_TLS_CA_FILE: pki.caFile,
      TEMPORAL_TLS_CERT_FILE: pki.client.certFile,
      TEMPORAL_TLS_KEY_FILE: pki.client.keyFile,
      TEMPORAL_TLS_SERVER_NAME: 'localhost',
    },
  };
  const namespace = options.namespace ?? 'default';
  await waitFor(
    `Temporal server on ${address} (log: ${path.join(options.dir, 'logs', `${temporalServerDaemon}.log`)})`,
    () => registerNamespace(access, namespace),
    120_000,
  );
  return access;
}

interface Pki {
  readonly caFile: string;
  readonly server: IssuedCertificate;
  readonly systemWorker: IssuedCertificate;
  readonly client: IssuedCertificate;
}

/** One CA per stack; kept across restarts of the stack (clients hold its files). */
async function certificates(home: string): Promise<Pki> {
  const dir = path.join(home, 'tls');
  const files = (name: string) => ({ certFile: path.join(dir, `${name}.pem`), keyFile: path.join(dir, `${name}-key.pem`) });
  const caFile = path.join(dir, 'temporal-ca.pem');
  if (existsSync(caFile)) {
    const read = (name: string) => ({ ...files(name), certPem: '', keyPem: '' });
    return { caFile, server: read('frontend'), systemWorker: read('system-worker'), client: read('zippchat-push') };
  }
  const ca = await createCertificateAuthority(dir, 'temporal');
  return {
    caFile: ca.caFile,
    server: await ca.issue('frontend', { usage: 'server', dnsNames: ['localhost'], ips: ['127.0.0.1'] }),
    systemWorker: await ca.issue('system-worker', { usage: 'client' }),
    client: await ca.issue('zippchat-push', { usage: 'client' }),
  };
}

interface ServerPorts {
  readonly frontend: number;
  readonly frontendHttp: number;
  readonly frontendMembership: number;
  readonly history: number;
  readonly historyMembership: number;
  readonly matching: number;
  readonly matchingMembership: number;
  readonly worker: number;
  readonly workerMembership: number;
}

async function serverPorts(frontend: number): Promise<ServerPorts> {
  const taken = new Set<number>([frontend]);
  const next = async () => {
    const port = await freePortBelow(32_768, taken);
    taken.add(port);
    return port;
  };
  return {
    frontend,
    frontendHttp: await next(),
    frontendMembership: await next(),
    history: await next(),
    historyMembership: await next(),
    matching: await next(),
    matchingMembership: await next(),
    worker: await next(),
    workerMembership: await next(),
  };
}

function serverConfig(options: TemporalServerOptions, ports: ServerPorts, pki: Pki, dynamicConfigFile: string): string {
  const { host, port, user } = options.postgres;
  const store = (database: string, maxConns: number) => `
      sql:
        pluginName: postgres12
        databaseName: ${database}
        connectAddr: "${host}:${port}"
        connectProtocol: tcp
        user: ${user}
        password: ""
        maxConns: ${maxConns}
        maxIdleConns: ${maxConns}
        maxConnLifetime: 1h`;
  const service = (grpc: number, membership: number, http?: number) =>
    `{ grpcPort: ${grpc}, membershipPort: ${membership}, bindOnLocalHost: true${http === undefined ? '' : `, httpPort: ${http}`} }`;
  return `# Written by devstack/temporal-server.ts for this stack only.
log:
  stdout: true
  level: warn
persistence:
  defaultStore: default
  visibilityStore: visibility
  numHistoryShards: 4
  datastores:
    default:${store('temporal', 20)}
    visibility:${store('temporal_visibility', 4)}
global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: 127.0.0.1
  tls:
    frontend:
      server:
        certFile: ${pki.server.certFile}
        keyFile: ${pki.server.keyFile}
        requireClientAuth: true
        clientCaFiles: [${pki.caFile}]
      client:
        serverName: localhost
        rootCaFiles: [${pki.caFile}]
    systemWorker:
      certFile: ${pki.systemWorker.certFile}
      keyFile: ${pki.systemWorker.keyFile}
      client:
        serverName: localhost
        rootCaFiles: [${pki.caFile}]
services:
  frontend:
    rpc: ${service(ports.frontend, ports.frontendMembership, ports.frontendHttp)}
  history:
    rpc: ${service(ports.history, ports.historyMembership)}
  matching:
    rpc: ${service(ports.matching, ports.matchingMembership)}
  worker:
    rpc: ${service(ports.worker, ports.workerMembership)}
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: "127.0.0.1:${ports.frontend}"
      httpAddress: "127.0.0.1:${ports.frontendHttp}"
dcRedirectionPolicy:
  policy: noop
dynamicConfigClient:
  filepath: ${dynamicConfigFile}
  pollInterval: 10s
`;
}

/** What the dev server sets too: search attributes usable as soon as they are added; one partition per task queue. */
const dynamicConfig = `# Written by devstack/temporal-server.ts.
limit.maxIDLength:
  - value: 255
system.forceSearchAttributesCacheRefreshOnRead:
  - value: true
# Every task queue of this server is the push service's: one partition each, served in order, as
# docs/operations.md ("Temporal server settings") asks of a production server for ours.
matching.numTaskqueueWritePartitions:
  - value: 1
matching.numTaskqueueReadPartitions:
  - value: 1
`;

/** Creates both databases and brings their schemas to the server's version (idempotent). */
async function setUpSchemas(options: TemporalServerOptions, home: string): Promise<void> {
  const marker = path.join(home, 'schema-ready');
  if (existsSync(marker)) return;
  const { host, port, user } = options.postgres;
  const tool = (database: string, ...args: string[]) =>
    run(options.binaries.sqlTool, ['--plugin', 'postgres12', '--ep', host, '-p', String(port), '-u', user, '--db', database, ...args]);
  for (const [database, schema] of [
    ['temporal', 'temporal'],
    ['temporal_visibility', 'visibility'],
  ] as const) {
    await tool(database, 'create').catch((error: { stderr?: string }) => {
      if (!/already exists/.test(error.stderr ?? '')) throw error;
    });
    await tool(database, 'setup-schema', '-v', '0.0');
    await tool(database, 'update-schema', '-d', path.join(options.binaries.schemaDir, schema, 'versioned'));
  }
  writeFileSync(marker, new Date().toISOString());
}

/**
 * The namespace and the search attributes: a real server has neither until asked (the dev
 * server's flags do both). Resolves true once both are in place.
 */
async function registerNamespace(access: TemporalServerAccess, namespace: string): Promise<boolean> {
  const connection = await Connection.connect({ address: access.address, tls: clientTls(access), connectTimeout: 2_000 });
  try {
    await connection.workflowService
      .registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('3 days') })
      .catch((error: { code?: number }) => {
        if (error.code !== 6) throw error; // ALREADY_EXISTS
      });
    const existing = await connection.operatorService.listSearchAttributes({ namespace });
    const missing = Object.keys(customSearchAttributes).filter((name) => !(name in (existing.customAttributes ?? {})));
    if (missing.length === 0) return true;
    const keyword = protos.temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD;
    await connection.operatorService.addSearchAttributes({ namespace, searchAttributes: Object.fromEntries(missing.map((name) => [name, keyword])) });
    return false;
  } finally {
    await connection.close();
  }
}

/**
 * The SDK's TLS options for a client of this server. The certificate names localhost as well
 * as 127.0.0.1; naming it avoids Node's warning about an IP address as TLS server name.
 */
export function clientTls(access: Pick<TemporalServerAccess, 'caFile' | 'client'>) {
  return {
    serverNameOverride: 'localhost',
    serverRootCACertificate: readFileSync(access.caFile),
    clientCertPair: { crt: readFileSync(access.client.certFile), key: readFileSync(access.client.keyFile) },
  };
}

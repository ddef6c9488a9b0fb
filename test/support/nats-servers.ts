/**
 * nats-server as production runs it, for the cluster tier: TLS (certificates from the test's
 * CA), one way of authenticating (user and password, a token, or operator mode with JWTs —
 * what a `.creds` file is for), and three-node JetStream clusters. Each server is a daemon of
 * the test's stack directory (stopped with it); readiness is read from its monitoring port.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createAccount, createOperator, createUser, encodeAccount, encodeOperator, encodeUser, fmtCreds } from '@nats-io/jwt';
import { daemonPid, logFile, sleep, startDaemon } from '../../devstack/daemons.js';
import { freePort } from '../../devstack/ports.js';

export type NatsServerAuth =
  | { readonly kind: 'user'; readonly user: string; readonly password: string }
  | { readonly kind: 'token'; readonly token: string }
  | { readonly kind: 'operator'; readonly config: string };

export interface NatsServerSpec {
  readonly name: string;
  readonly tls?: { readonly certFile: string; readonly keyFile: string };
  readonly auth?: NatsServerAuth;
  /** Cluster peers: this node's route port and every node's. */
  readonly cluster?: { readonly port: number; readonly routes: readonly number[] };
}

export interface NatsServer {
  readonly name: string;
  readonly url: string;
  readonly port: number;
  readonly daemon: string;
  /** Starts the process (again, after a kill: same store, same port) and waits until healthy. */
  start(): Promise<void>;
  /** Starts the process without waiting (cluster members start together: none is healthy alone). */
  launch(): void;
  ready(): Promise<void>;
}

/** Writes the server's config and starts it (`wait: false`: only writes it; call `launch`/`ready`). */
export async function startNatsServer(
  natsServerBin: string,
  dir: string,
  spec: NatsServerSpec,
  options: { wait?: boolean } = {},
): Promise<NatsServer> {
  const home = path.join(dir, `nats-${spec.name}`);
  mkdirSync(home, { recursive: true });
  const port = await freePort();
  const monitor = await freePort();
  const configFile = path.join(home, 'nats.conf');
  writeFileSync(configFile, natsConfig(spec, { port, monitor, store: path.join(home, 'jetstream') }));
  const daemon = `nats-${spec.name}`;
  const scheme = spec.tls === undefined ? 'nats' : 'tls';
  const server: NatsServer = {
    name: spec.name,
    url: `${scheme}://127.0.0.1:${port}`,
    port,
    daemon,
    launch() {
      startDaemon(dir, { name: daemon, command: natsServerBin, args: ['-c', configFile] });
    },
    async ready() {
      // A clustered JetStream answers healthz only once it has a meta leader: wait for that.
      const deadline = Date.now() + 60_000;
      while ((await fetch(`http://127.0.0.1:${monitor}/healthz`).catch(() => undefined))?.status !== 200) {
        // A server that exited (a port taken meanwhile, a config it refuses) says why in its log.
        if (daemonPid(dir, daemon) === undefined) throw new Error(`${daemon} exited: ${lastLines(logFile(dir, daemon))}`);
        if (Date.now() > deadline) throw new Error(`timed out after 60 s waiting for ${daemon} healthy: ${lastLines(logFile(dir, daemon))}`);
        await sleep(200);
      }
    },
    async start() {
      server.launch();
      await server.ready();
    },
  };
  if (options.wait !== false) await server.start();
  return server;
}

function lastLines(file: string): string {
  return readFileSync(file, 'utf8').trim().split('\n').slice(-5).join(' | ');
}

function natsConfig(spec: NatsServerSpec, at: { port: number; monitor: number; store: string }): string {
  const lines = [
    `server_name: ${spec.name}`,
    `listen: 127.0.0.1:${at.port}`,
    `http: 127.0.0.1:${at.monitor}`,
    `jetstream { store_dir: ${JSON.stringify(at.store)} }`,
  ];
  if (spec.tls !== undefined)
    lines.push(`tls { cert_file: ${JSON.stringify(spec.tls.certFile)}, key_file: ${JSON.stringify(spec.tls.keyFile)}, timeout: 5 }`);
  if (spec.auth?.kind === 'user')
    lines.push(`authorization { user: ${JSON.stringify(spec.auth.user)}, password: ${JSON.stringify(spec.auth.password)} }`);
  if (spec.auth?.kind === 'token') lines.push(`authorization { token: ${JSON.stringify(spec.auth.token)} }`);
  if (spec.auth?.kind === 'operator') lines.push(spec.auth.config);
  if (spec.cluster !== undefined) {
    const routes = spec.cluster.routes.filter((p) => p !== spec.cluster!.port).map((p) => `nats-route://127.0.0.1:${p}`);
    lines.push(`cluster { name: zippchat-test, listen: 127.0.0.1:${spec.cluster.port}, routes: [${routes.join(', ')}] }`);
  }
  return `${lines.join('\n')}\n`;
}

/**
 * Operator mode: an operator, a system account, an application account with JetStream, and
 * one user of it whose `.creds` file (user JWT + nkey seed) is what NATS_CREDS_FILE names.
 */
export async function operatorAuth(credsFile: string): Promise<NatsServerAuth> {
  const operator = createOperator();
  const system = createAccount();
  const app = createAccount();
  const user = createUser();
  const operatorJwt = await encodeOperator('zippchat-test', operator, { system_account: system.getPublicKey() });
  const systemJwt = await encodeAccount('SYS', system, {}, { signer: operator });
  // An account's limits default to zero: everything it may do is said here, JetStream included.
  const unlimited = {
    subs: -1,
    data: -1,
    payload: -1,
    imports: -1,
    exports: -1,
    wildcards: true,
    conn: -1,
    leaf: -1,
    mem_storage: -1,
    disk_storage: -1,
    streams: -1,
    consumer: -1,
  };
  const appJwt = await encodeAccount('ZIPPCHAT', app, { limits: unlimited } as never, { signer: operator });
  const userJwt = await encodeUser('push', user, app);
  writeFileSync(credsFile, fmtCreds(userJwt, user), { mode: 0o600 });
  const config = [
    `operator: ${operatorJwt}`,
    `system_account: ${system.getPublicKey()}`,
    'resolver: MEMORY',
    `resolver_preload: { ${system.getPublicKey()}: ${systemJwt}, ${app.getPublicKey()}: ${appJwt} }`,
  ].join('\n');
  return { kind: 'operator', config };
}

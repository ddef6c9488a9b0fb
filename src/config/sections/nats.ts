/**
 * NATS (docs/design.md, Configuration): the servers, one way of authenticating (a `.creds` file, user and
 * password, or a token) and TLS (a CA file makes TLS required; a client certificate for
 * servers that verify clients). Files are read and checked at start.
 */
import { parseRfc3339 } from '../../../domain/rfc3339.js';
import { ConfigError } from '../errors.js';
import { readFile } from '../env.js';
import { section } from '../section.js';
import { readCaFile, readCertificatePair } from '../tls-files.js';
import { text, tryUrl } from '../vars.js';

export type NatsAuth =
  | { readonly kind: 'none' }
  | { readonly kind: 'user'; readonly user: string; readonly password: string }
  | { readonly kind: 'token'; readonly token: string }
  /** The `.creds` file's text: a user JWT and its nkey seed. */
  | { readonly kind: 'creds'; readonly creds: string };

export interface NatsTls {
  readonly ca?: string;
  readonly cert?: string;
  readonly key?: string;
}

export interface NatsSettings {
  readonly servers: readonly string[];
  /** Secret: never log. */
  readonly auth: NatsAuth;
  /** Absent: plain TCP unless the server asks for TLS (then the system's roots verify it). */
  readonly tls?: NatsTls;
}

export const natsSection = section(
  {
    NATS_URL: text(),
    NATS_CREDS_FILE: text(),
    NATS_USER: text(),
    NATS_PASSWORD: text(),
    NATS_TOKEN: text(),
    NATS_TLS_CA_FILE: text(),
    NATS_TLS_CERT_FILE: text(),
    NATS_TLS_KEY_FILE: text(),
  },
  (v): { nats: NatsSettings } => {
    const servers = natsServers(v.NATS_URL ?? 'nats://127.0.0.1:4222');
    const auth = natsAuth(v);
    const pair = readCertificatePair('NATS_TLS_CERT_FILE', v.NATS_TLS_CERT_FILE, 'NATS_TLS_KEY_FILE', v.NATS_TLS_KEY_FILE);
    const ca = v.NATS_TLS_CA_FILE === undefined ? undefined : readCaFile('NATS_TLS_CA_FILE', v.NATS_TLS_CA_FILE).toString('utf8');
    const wantsTls = ca !== undefined || pair !== undefined || servers.some((s) => s.startsWith('tls://'));
    const tls: NatsTls | undefined = wantsTls
      ? { ...(ca === undefined ? {} : { ca }), ...(pair === undefined ? {} : { cert: pair.crt.toString('utf8'), key: pair.key.toString('utf8') }) }
      : undefined;
    return { nats: { servers, auth, ...(tls === undefined ? {} : { tls }) } };
  },
);

function natsServers(value: string): string[] {
  const servers = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  for (const server of servers) {
    const url = tryUrl(server);
    if (url === undefined || !['nats:', 'tls:', 'ws:', 'wss:'].includes(url.protocol) || url.hostname === '') {
      throw new ConfigError('NATS_URL', `must be comma-separated nats:// URLs (bad entry "${server.replace(/\/\/[^@/]*@/, '//***@')}")`);
    }
  }
  if (servers.length === 0) throw new ConfigError('NATS_URL', 'must name at least one server');
  return servers;
}

function natsAuth(v: {
  readonly NATS_CREDS_FILE?: string;
  readonly NATS_USER?: string;
  readonly NATS_PASSWORD?: string;
  readonly NATS_TOKEN?: string;
}): NatsAuth {
  const methods = [v.NATS_CREDS_FILE && 'NATS_CREDS_FILE', (v.NATS_USER ?? v.NATS_PASSWORD) && 'NATS_USER', v.NATS_TOKEN && 'NATS_TOKEN'].filter(
    Boolean,
  );
  if (methods.length > 1)
    throw new ConfigError(String(methods[1]), `must not be set together with ${String(methods[0])} (one way of authenticating)`);
  if (v.NATS_CREDS_FILE !== undefined) {
    const creds = readFile('NATS_CREDS_FILE', v.NATS_CREDS_FILE).toString('utf8');
    if (!/-----BEGIN NATS USER JWT-----/.test(creds) || !/-----BEGIN USER NKEY SEED-----/.test(creds)) {
      throw new ConfigError('NATS_CREDS_FILE', `names a file that is not a NATS .creds file (a user JWT and an nkey seed) (${v.NATS_CREDS_FILE})`);
    }
    return { kind: 'creds', creds };
  }
  if (v.NATS_USER !== undefined || v.NATS_PASSWORD !== undefined) {
    if (v.NATS_USER === undefined) throw new ConfigError('NATS_USER', 'is required with NATS_PASSWORD');
    if (v.NATS_PASSWORD === undefined) throw new ConfigError('NATS_PASSWORD', 'is required with NATS_USER');
    return { kind: 'user', user: v.NATS_USER, password: v.NATS_PASSWORD };
  }
  if (v.NATS_TOKEN !== undefined) return { kind: 'token', token: v.NATS_TOKEN };
  return { kind: 'none' };
}

/** Where the bridge's consumer starts when it is created: at this time, or (unset) at new messages. */
export const bridgeStartSection = section({ BRIDGE_START_AT: text() }, (v) => {
  if (v.BRIDGE_START_AT === undefined) return { bridgeStartAt: undefined };
  const date = parseRfc3339(v.BRIDGE_START_AT.trim());
  if (date === undefined) {
    throw new ConfigError('BRIDGE_START_AT', `must be an RFC 3339 date-time with an offset, e.g. 2026-12-01T00:00:00Z (got "${v.BRIDGE_START_AT}")`);
  }
  return { bridgeStartAt: date as Date | undefined };
});

/**
 * How every process reaches the Temporal frontend: the address plus TLS, mTLS and/or an API
 * key, in the form both `Connection` (client) and `NativeConnection` (worker)
 * take. One place, so the api, worker, bridge and the operator CLI cannot disagree.
 *
 * When a call fails, `explainTemporalFailure` says why in one secret-free line. The SDKs do not
 * always tell (the client's gRPC library reports any failed connect as "Failed to connect
 * before the deadline"), so for a failure without a clear cause it probes the frontend itself:
 * a TCP connect and, with TLS, a handshake with the same settings, reading the server's alert.
 */
import { connect as tcpConnect } from 'node:net';
import { checkServerIdentity, connect as tlsConnect, type ConnectionOptions } from 'node:tls';
import type { TemporalSettings } from '../src/config/index.js';

export interface TemporalConnectionOptions {
  readonly address: string;
  readonly tls?: TemporalSettings['tls'];
  readonly apiKey?: string;
}

export function temporalConnectionOptions(settings: Pick<TemporalSettings, 'address' | 'tls' | 'apiKey'>): TemporalConnectionOptions {
  return {
    address: settings.address,
    ...(settings.tls === undefined ? {} : { tls: settings.tls }),
    ...(settings.apiKey === undefined ? {} : { apiKey: settings.apiKey }),
  };
}

/** Why a call to the frontend failed, for logs and start-up errors. */
export async function explainTemporalFailure(error: unknown, options: TemporalConnectionOptions): Promise<string> {
  const text = error instanceof Error ? error.message : String(error);
  const alert = tlsAlertReason(text);
  if (alert !== undefined) return `TLS handshake with the Temporal frontend failed (${alert})`;
  if (/UNAUTHENTICATED|PERMISSION_DENIED|Request unauthorized|invalid API key/i.test(text)) {
    return 'the Temporal frontend refused our credentials (TEMPORAL_API_KEY or the client certificate)';
  }
  return (await probe(options).catch(() => undefined)) ?? 'the Temporal frontend did not answer the call';
}

/** Rustls (worker) and OpenSSL (probe) name the same alerts differently. */
function tlsAlertReason(text: string): string | undefined {
  const alerts: Array<[RegExp, string]> = [
    [/CertificateRequired|CERTIFICATE_REQUIRED/i, 'the frontend requires a client certificate: TEMPORAL_TLS_CERT_FILE and TEMPORAL_TLS_KEY_FILE'],
    [/UnknownCA|UNKNOWN_CA/i, 'the frontend does not trust the CA of our client certificate'],
    [/BadCertificate|BAD_CERTIFICATE/i, 'the frontend rejected our client certificate'],
    [
      /UnknownIssuer|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_GET_ISSUER_CERT|UNABLE_TO_VERIFY_LEAF_SIGNATURE|DEPTH_ZERO_SELF_SIGNED/i,
      "the frontend's certificate is not signed by a CA we trust (TEMPORAL_TLS_CA_FILE)",
    ],
    [
      /NotValidForName|ERR_TLS_CERT_ALTNAME_INVALID|CertNotValidForName/i,
      "the frontend's certificate does not name its host (TEMPORAL_TLS_SERVER_NAME)",
    ],
    [/CERT_HAS_EXPIRED|Expired/, 'a certificate has expired'],
    [/wrong version number|WRONG_VERSION_NUMBER|packet length too long/i, 'the frontend does not speak TLS here (TEMPORAL_TLS)'],
  ];
  return alerts.find(([pattern]) => pattern.test(text))?.[1];
}

async function probe(options: TemporalConnectionOptions, timeoutMs = 3_000): Promise<string | undefined> {
  const { host, port } = splitAddress(options.address);
  if (options.tls === undefined) {
    return new Promise((resolve) => {
      const socket = tcpConnect({ host, port, timeout: timeoutMs });
      socket.once('connect', () => (socket.destroy(), resolve(undefined)));
      socket.once('timeout', () => (socket.destroy(), resolve('the Temporal frontend is unreachable (timeout)')));
      socket.once('error', (e: NodeJS.ErrnoException) => resolve(`the Temporal frontend is unreachable (${e.code ?? 'error'})`));
    });
  }
  const tls = options.tls;
  const settings: ConnectionOptions = {
    host,
    port,
    ALPNProtocols: ['h2'],
    ...(tls.serverNameOverride !== undefined ? { servername: tls.serverNameOverride } : /^[\d.:[\]]+$/.test(host) ? {} : { servername: host }),
    ...(tls.serverRootCACertificate === undefined ? {} : { ca: tls.serverRootCACertificate }),
    ...(tls.clientCertPair === undefined ? {} : { cert: tls.clientCertPair.crt, key: tls.clientCertPair.key }),
  };
  if (tls.serverNameOverride !== undefined) settings.checkServerIdentity = checkName(tls.serverNameOverride);
  return new Promise((resolve) => {
    const socket = tlsConnect(settings);
    const done = (reason: string | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(reason);
    };
    const timer = setTimeout(() => done('the Temporal frontend is unreachable (timeout)'), timeoutMs);
    socket.once('error', (e: NodeJS.ErrnoException) => {
      const reason = tlsAlertReason(`${e.code ?? ''} ${e.message}`);
      done(
        reason !== undefined
          ? `TLS handshake with the Temporal frontend failed (${reason})`
          : `the Temporal frontend is unreachable (${e.code ?? 'error'})`,
      );
    });
    // TLS 1.3 finishes the client's side before the server has judged our certificate: send
    // the HTTP/2 preface and wait for the server's first frame (accepted) or its alert (refused).
    socket.once('secureConnect', () => socket.write('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00'));
    socket.once('data', () => done(undefined));
  });
}

function checkName(name: string): NonNullable<ConnectionOptions['checkServerIdentity']> {
  return (_host, certificate) => checkServerIdentity(name, certificate);
}

function splitAddress(address: string): { host: string; port: number } {
  const at = address.lastIndexOf(':');
  return { host: address.slice(0, at).replace(/^\[|\]$/g, ''), port: Number(address.slice(at + 1)) };
}

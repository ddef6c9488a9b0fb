/**
 * How every process reaches the Temporal frontend: the address plus TLS, mTLS and/or an API
 * key, in the form both `Connection` (client) and `NativeConnection` (worker)
 * take. One place, so the api, worker, bridge and the operator CLI cannot disagree.
 *
 * When a call fails, `explainTemporalFailure` says why in one secret-free line: the frontend
 * refused our TLS handshake (its alert), we refused its certificate, it closed the connection,
 * or it did not answer at all. The SDKs do not always tell (the client's gRPC library reports
 * any failed connect as "Failed to connect before the deadline"; the worker's reports a reset),
 * so for a failure without a clear cause it probes the frontend itself: a TCP connect and, with
 * TLS, a handshake with the same settings, reading the server's alert or its silence.
 */
import { connect as tcpConnect } from 'node:net';
import { checkServerIdentity, connect as tlsConnect, type ConnectionOptions } from 'node:tls';
import type { TemporalSettings } from '../src/config/index.js';
import { connectionFailure, describeAlert, errorText, peerAlert } from '../src/process/connection-failure.js';

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
  const text = errorText(error);
  const refusal = handshakeRefusal(text);
  if (refusal !== undefined) return refusal;
  if (/UNAUTHENTICATED|PERMISSION_DENIED|Request unauthorized|invalid API key/i.test(text)) {
    return 'the Temporal frontend refused our credentials (TEMPORAL_API_KEY or the client certificate)';
  }
  const failure = connectionFailure(error);
  if (failure?.kind === 'no-answer' && failure.why !== 'timeout') return `${frontend} at ${options.address} did not answer (${failure.why})`;
  // A reset, a timeout or nothing said: the probe tells which stage failed, and sees an alert
  // the SDK may have lost to the reset that followed it.
  const probed = await probe(options).catch(() => undefined);
  if (probed !== undefined) return probed;
  if (failure?.kind === 'closed') return closedMessage(options);
  return failure?.kind === 'no-answer' ? `${frontend} at ${options.address} did not answer (${failure.why})` : `${frontend} did not answer the call`;
}

const frontend = 'the Temporal frontend';
const clientCertificate = 'TEMPORAL_TLS_CERT_FILE and TEMPORAL_TLS_KEY_FILE';

/** The frontend's alert, or our refusal of its certificate, when the text names either. */
function handshakeRefusal(text: string): string | undefined {
  const alert = peerAlert(text);
  if (alert !== undefined) return describeAlert(frontend, alert, clientCertificate);
  const ours = ourRefusal(text);
  return ours === undefined ? undefined : `TLS handshake with ${frontend} failed (${ours})`;
}

/** A failure of the probe's own connection, from its error. */
function describeProbeError(error: Error, options: TemporalConnectionOptions): string {
  const refusal = handshakeRefusal(errorText(error));
  if (refusal !== undefined) return refusal;
  const failure = connectionFailure(error);
  if (failure?.kind === 'no-answer') return `${frontend} at ${options.address} did not answer (${failure.why})`;
  if (failure?.kind === 'closed') return closedMessage(options);
  return `the connection to ${frontend} at ${options.address} failed: ${error.message.split('\n')[0]}`;
}

/** Our side refused the frontend's certificate, or the frontend does not speak TLS. Rustls (worker) and OpenSSL (probe) word these differently. */
function ourRefusal(text: string): string | undefined {
  const refusals: Array<[RegExp, string]> = [
    [
      /UnknownIssuer|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_GET_ISSUER_CERT|UNABLE_TO_VERIFY_LEAF_SIGNATURE|DEPTH_ZERO_SELF_SIGNED/i,
      "the frontend's certificate is not signed by a CA we trust (TEMPORAL_TLS_CA_FILE)",
    ],
    [
      /NotValidForName|ERR_TLS_CERT_ALTNAME_INVALID|CertNotValidForName/i,
      "the frontend's certificate does not name its host (TEMPORAL_TLS_SERVER_NAME)",
    ],
    [/CERT_HAS_EXPIRED|invalid peer certificate: Expired/, "the frontend's certificate has expired"],
    [
      /wrong version number|WRONG_VERSION_NUMBER|packet length too long|InvalidContentType|CorruptMessage/i,
      'the frontend does not speak TLS here (TEMPORAL_TLS)',
    ],
  ];
  return refusals.find(([pattern]) => pattern.test(text))?.[1];
}

function closedMessage(options: TemporalConnectionOptions): string {
  return options.tls === undefined
    ? `${frontend} at ${options.address} closed the connection without answering (does it want TLS? TEMPORAL_TLS)`
    : `${frontend} at ${options.address} closed the connection during the TLS handshake, without an alert (does it accept our client certificate? ${clientCertificate})`;
}

/**
 * Connects to the frontend as the SDKs would and says what went wrong, or undefined when the
 * frontend answers. Each stage has its own message: no TCP connection, no answer to the TLS
 * handshake, an alert, a close without one.
 */
async function probe(options: TemporalConnectionOptions, timeoutMs = 3_000): Promise<string | undefined> {
  const { host, port } = splitAddress(options.address);
  const silent = (stage: string) => `${frontend} at ${options.address} did not answer ${stage} within ${timeoutMs} ms`;
  if (options.tls === undefined) {
    return new Promise((resolve) => {
      const socket = tcpConnect({ host, port, timeout: timeoutMs });
      socket.once('connect', () => (socket.destroy(), resolve(undefined)));
      socket.once('timeout', () => (socket.destroy(), resolve(silent('our TCP connect'))));
      socket.once('error', (e) => resolve(describeProbeError(e, options)));
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
    let stage = 'our TCP connect';
    const done = (reason: string | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(reason);
    };
    const timer = setTimeout(() => done(silent(stage)), timeoutMs);
    socket.once('connect', () => (stage = 'our TLS handshake'));
    socket.once('error', (e) => done(describeProbeError(e, options)));
    // TLS 1.3 finishes the client's side before the server has judged our certificate: send
    // the HTTP/2 preface and wait for the server's first frame (accepted), its alert, or its
    // close (refused; a server that checks certificates after the handshake sends no alert).
    socket.once('secureConnect', () => {
      stage = 'after our TLS handshake';
      socket.write('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00');
    });
    socket.once('data', () => done(undefined));
    socket.once('close', () => done(closedMessage(options)));
  });
}

function checkName(name: string): NonNullable<ConnectionOptions['checkServerIdentity']> {
  return (_host, certificate) => checkServerIdentity(name, certificate);
}

function splitAddress(address: string): { host: string; port: number } {
  const at = address.lastIndexOf(':');
  return { host: address.slice(0, at).replace(/^\[|\]$/g, ''), port: Number(address.slice(at + 1)) };
}

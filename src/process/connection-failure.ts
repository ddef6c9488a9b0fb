/**
 * What a failed connection says about its cause, in the words an operator acts on. Node
 * (OpenSSL) and Temporal's Rust core (rustls, hyper) word the same event differently; both are
 * read here, down the error's `cause` chain:
 * - `alert`: the peer refused our TLS handshake and said why ("bad certificate": look at our
 *   client certificate, not at the network);
 * - `closed`: the peer closed or reset the connection without an alert (`duringTls`: before
 *   the TLS handshake was complete, as a server that refuses a certificate without saying so);
 * - `no-answer`: nothing answered (connection refused, host not found, timeout).
 * Our own refusal of the peer's certificate is the caller's to name: it knows the setting.
 */
export type ConnectionFailure =
  | { readonly kind: 'alert'; readonly alert: string }
  | { readonly kind: 'closed'; readonly duringTls: boolean }
  | { readonly kind: 'no-answer'; readonly why: string };

const closed =
  /ECONNRESET|ConnectionReset|EPIPE|BrokenPipe|UnexpectedEof|tls handshake eof|socket disconnected before secure TLS|Connection terminated unexpectedly/i;
const closedDuringTls = /before secure TLS|tls handshake eof|without sending TLS close_notify/i;

export function connectionFailure(error: unknown): ConnectionFailure | undefined {
  const text = errorText(error);
  const alert = peerAlert(text);
  if (alert !== undefined) return { kind: 'alert', alert };
  const why = noAnswer(text);
  if (why !== undefined) return { kind: 'no-answer', why };
  if (closed.test(text)) return { kind: 'closed', duringTls: closedDuringTls.test(text) };
  return undefined;
}

/** The messages and codes of `error` and its causes (NATS chains through `chainedError`), as one text. */
export function errorText(error: unknown): string {
  const texts: string[] = [];
  for (let cause: unknown = error, depth = 0; depth < 6 && cause !== undefined && cause !== null; depth++) {
    if (!(cause instanceof Error)) {
      texts.push(String(cause));
      break;
    }
    texts.push(`${cause.message} ${(cause as { code?: unknown }).code ?? ''}`);
    cause = (cause as { chainedError?: unknown }).chainedError ?? cause.cause;
  }
  return texts.join(' ');
}

/**
 * The TLS alert the peer sent, in RFC 8446's words with spaces ("bad certificate"). rustls:
 * "received fatal alert: BadCertificate"; OpenSSL: "ERR_SSL_SSL/TLS_ALERT_BAD_CERTIFICATE" and
 * "…:ssl/tls alert bad certificate:…" (OpenSSL 1.1: "SSLV3", "TLSV1", "TLSV13" in their place).
 */
export function peerAlert(text: string): string | undefined {
  const rustls = /received fatal alert: ([A-Za-z]+)/.exec(text)?.[1];
  if (rustls !== undefined) return rustls.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();
  const code = /ERR_SSL_(?:SSLV3|TLSV1|TLSV13|SSL\/TLS)_ALERT_([A-Z_]+)/.exec(text)?.[1];
  if (code !== undefined) return code.replace(/_/g, ' ').toLowerCase();
  return /(?:sslv3|tlsv1|tlsv13|ssl\/tls) alert ([a-z ]+)/i.exec(text)?.[1]?.trim().toLowerCase();
}

function noAnswer(text: string): string | undefined {
  if (/ECONNREFUSED|ConnectionRefused|Connection refused/i.test(text)) return 'connection refused';
  if (/ENOTFOUND|EAI_AGAIN|failed to lookup address|dns error/i.test(text)) return 'host not found';
  if (/EHOSTUNREACH|ENETUNREACH|HostUnreachable|NetworkUnreachable|No route to host/i.test(text)) return 'no route to host';
  if (/ETIMEDOUT|TimedOut|timed out|\btimeout\b/i.test(text)) return 'timeout';
  return undefined;
}

/**
 * What an alert most likely means for us, the client, naming the settings of our client
 * certificate (`certificate`) — or undefined for an alert that points at nothing of ours.
 */
export function alertHint(alert: string, certificate: string): string | undefined {
  if (alert === 'certificate required') return `it requires a client certificate: ${certificate}`;
  if (alert === 'unknown ca') return `it does not trust the CA of our client certificate: ${certificate}`;
  if (alert === 'certificate expired') return `our client certificate has expired: ${certificate}`;
  if (/certificate|access denied/.test(alert)) return `it does not accept our client certificate: ${certificate}`;
  if (alert === 'handshake failure') return `TLS 1.2's answer to a missing client certificate: ${certificate}; or no cipher in common`;
  return undefined;
}

/** "TLS handshake with <peer> refused by the peer: alert <alert> (<hint>)". */
export function describeAlert(peer: string, alert: string, certificate: string): string {
  const hint = alertHint(alert, certificate);
  return `TLS handshake with ${peer} refused by the peer: alert ${alert}${hint === undefined ? '' : ` (${hint})`}`;
}

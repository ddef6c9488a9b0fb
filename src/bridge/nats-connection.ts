/**
 * The bridge's NATS connection options: servers, one way of authenticating and
 * TLS, from the configuration. A NATS server that refuses us for a certificate or credentials
 * problem says so in the error; `describeNatsFailure` turns that into one line.
 */
import { credsAuthenticator, type ConnectionOptions } from '@nats-io/transport-node';
import type { NatsSettings } from '../config/index.js';
import { connectionFailure, describeAlert, errorText } from '../process/connection-failure.js';

export function natsConnectionOptions(settings: NatsSettings, name: string): ConnectionOptions {
  return {
    servers: [...settings.servers],
    name,
    maxReconnectAttempts: -1,
    ...authOptions(settings.auth),
    ...(settings.tls === undefined ? {} : { tls: { ...settings.tls } }),
  };
}

function authOptions(auth: NatsSettings['auth']): Partial<ConnectionOptions> {
  switch (auth.kind) {
    case 'none':
      return {};
    case 'user':
      return { user: auth.user, pass: auth.password };
    case 'token':
      return { token: auth.token };
    case 'creds':
      return { authenticator: credsAuthenticator(new TextEncoder().encode(auth.creds)) };
  }
}

/** A secret-free reason for a failed connection: the TLS handshake refused by either side, refused credentials, or no answer. */
export function describeNatsFailure(error: unknown): string {
  const text = errorText(error);
  const failure = connectionFailure(error);
  if (failure?.kind === 'alert') return describeAlert('NATS', failure.alert, 'NATS_TLS_CERT_FILE and NATS_TLS_KEY_FILE');
  if (/Authorization Violation|AUTHORIZATION_VIOLATION|authentication/i.test(text)) return 'NATS refused our credentials (Authorization Violation)';
  const tls: Array<[RegExp, string]> = [
    [/certificate required|CERTIFICATE_REQUIRED/i, 'the server requires a client certificate: NATS_TLS_CERT_FILE and NATS_TLS_KEY_FILE'],
    [/unknown ca|UNKNOWN_CA|bad certificate/i, 'the server does not accept our client certificate'],
    [
      /self.signed|unable to verify|unable to get (local )?issuer|UNABLE_TO_VERIFY|SELF_SIGNED/i,
      'the server certificate is not signed by the CA in NATS_TLS_CA_FILE',
    ],
    [/altname|hostname|ALTNAME_INVALID/i, 'the server certificate does not name the host in NATS_URL'],
    [/expired/i, 'a certificate has expired'],
  ];
  const reason = tls.find(([pattern]) => pattern.test(text))?.[1];
  if (reason !== undefined) return `TLS with NATS failed: ${reason}`;
  if (failure?.kind === 'no-answer') return `NATS did not answer (${failure.why})`;
  if (/CONNECTION_REFUSED/i.test(text)) return 'NATS did not answer (connection refused)';
  if (failure?.kind === 'closed') {
    return failure.duringTls
      ? 'NATS closed the connection during the TLS handshake, without an alert (does it accept our client certificate? NATS_TLS_CERT_FILE and NATS_TLS_KEY_FILE)'
      : 'NATS closed the connection';
  }
  return `NATS connection failed: ${text.split('\n')[0]!.trim()}`;
}

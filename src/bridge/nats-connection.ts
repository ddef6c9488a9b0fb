/**
 * The bridge's NATS connection options (contract §3a): servers, one way of authenticating and
 * TLS, from the configuration. A NATS server that refuses us for a certificate or credentials
 * problem says so in the error; `describeNatsFailure` turns that into one line.
 */
import { credsAuthenticator, type ConnectionOptions } from 'nats';
import type { NatsSettings } from '../config/index.js';

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

/** A secret-free reason for a failed connection. */
export function describeNatsFailure(error: unknown): string {
  const text = error instanceof Error ? `${error.message} ${(error as { code?: string }).code ?? ''}` : String(error);
  if (/Authorization Violation|AUTHORIZATION_VIOLATION|authentication|user authentication expired/i.test(text)) return 'NATS refused our credentials (Authorization Violation)';
  if (/certificate|self.signed|CERT_|SSL|TLS|handshake/i.test(text)) return `TLS with NATS failed (${/self.signed|unable to verify|expired|hostname|altname/i.exec(text)?.[0] ?? 'certificate not accepted'})`;
  if (/CONNECTION_REFUSED|ECONNREFUSED|timeout|TIMEOUT/i.test(text)) return 'NATS is unreachable';
  return 'NATS connection failed';
}

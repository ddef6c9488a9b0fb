/**
 * How every process reaches the Temporal frontend: the address plus TLS, mTLS and/or an API
 * key (contract §3a), in the form both `Connection` (client) and `NativeConnection` (worker)
 * take. One place, so the api, worker, bridge and the operator CLI cannot disagree.
 */
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

/**
 * A short, secret-free reason for a failed call, telling a TLS or authentication problem
 * (fix the configuration) from an unreachable frontend (wait). The SDKs report both as
 * gRPC errors whose text names the cause.
 */
export function describeTemporalFailure(error: unknown): string {
  const text = error instanceof Error ? `${error.message} ${String((error as { details?: unknown }).details ?? '')}` : String(error);
  if (/certificate|CertificateRequired|UnknownIssuer|tls|handshake|alert/i.test(text)) return `TLS handshake with the Temporal frontend failed (${tlsDetail(text)})`;
  if (/UNAUTHENTICATED|PERMISSION_DENIED|unauthori[sz]ed|api key|Request unauthorized/i.test(text)) return 'the Temporal frontend refused our credentials (API key or client certificate)';
  if (/deadline|timed out|Failed to connect|ECONNREFUSED|UNAVAILABLE|unreachable/i.test(text)) return 'the Temporal frontend is unreachable';
  return 'the Temporal frontend call failed';
}

function tlsDetail(text: string): string {
  const known = ['CertificateRequired', 'UnknownIssuer', 'BadCertificate', 'NotValidForName', 'certificate required', 'unknown ca', 'self-signed', 'expired'];
  return known.find((k) => text.toLowerCase().includes(k.toLowerCase())) ?? 'see the server log';
}

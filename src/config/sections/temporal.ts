/**
 * The Temporal frontend (docs/design.md, Configuration): address, namespace, task queue, and how to
 * reach a secured cluster or Temporal Cloud — TLS (system roots or a CA file), mTLS (a client
 * certificate) and/or an API key sent as a bearer token (TLS required).
 */
import { ConfigError } from '../errors.js';
import { section } from '../section.js';
import { readCaFile, readCertificatePair, type CertificatePair } from '../tls-files.js';
import { boolean, hostPort, httpUrl, identifier, optionalHostName, text } from '../vars.js';

/** The SDK's TLS options (`Connection.connect` and `NativeConnection.connect` take the same). */
export interface TemporalTls {
  readonly serverNameOverride?: string;
  readonly serverRootCACertificate?: Buffer;
  readonly clientCertPair?: CertificatePair;
}

export interface TemporalSettings {
  readonly address: string;
  readonly namespace: string;
  readonly taskQueue: string;
  /** The Temporal Web UI, for links printed by the operator tools; optional. */
  readonly uiUrl?: string;
  /** Absent: plain TCP (the dev server). */
  readonly tls?: TemporalTls;
  /** Temporal Cloud API key. Secret: never log. */
  readonly apiKey?: string;
}

const tlsVariables = ['TEMPORAL_TLS_CA_FILE', 'TEMPORAL_TLS_CERT_FILE', 'TEMPORAL_TLS_KEY_FILE', 'TEMPORAL_TLS_SERVER_NAME'] as const;

export const temporalSection = section(
  {
    TEMPORAL_ADDRESS: hostPort('127.0.0.1:7233'),
    TEMPORAL_NAMESPACE: identifier('default'),
    TEMPORAL_TASK_QUEUE: identifier('push-wakes'),
    TEMPORAL_UI_URL: httpUrl(),
    TEMPORAL_TLS: text(),
    TEMPORAL_TLS_CA_FILE: text(),
    TEMPORAL_TLS_CERT_FILE: text(),
    TEMPORAL_TLS_KEY_FILE: text(),
    TEMPORAL_TLS_SERVER_NAME: optionalHostName(),
    TEMPORAL_API_KEY: text(),
  },
  (v): { temporal: TemporalSettings } => {
    const implied = tlsVariables.some((name) => v[name] !== undefined) || v.TEMPORAL_API_KEY !== undefined;
    const tlsOn = boolean(implied).safeParse(v.TEMPORAL_TLS);
    if (!tlsOn.success) throw new ConfigError('TEMPORAL_TLS', `must be true or false (got "${v.TEMPORAL_TLS}")`);
    if (!tlsOn.data && implied) {
      const why = v.TEMPORAL_API_KEY !== undefined ? 'TEMPORAL_API_KEY requires TLS' : 'a TEMPORAL_TLS_* setting is given';
      throw new ConfigError('TEMPORAL_TLS', `is false but ${why}`);
    }
    const settings = {
      address: v.TEMPORAL_ADDRESS,
      namespace: v.TEMPORAL_NAMESPACE,
      taskQueue: v.TEMPORAL_TASK_QUEUE,
      ...(v.TEMPORAL_UI_URL === undefined ? {} : { uiUrl: v.TEMPORAL_UI_URL }),
      ...(v.TEMPORAL_API_KEY === undefined ? {} : { apiKey: v.TEMPORAL_API_KEY }),
    };
    if (!tlsOn.data) return { temporal: settings };
    const clientCertPair = readCertificatePair('TEMPORAL_TLS_CERT_FILE', v.TEMPORAL_TLS_CERT_FILE, 'TEMPORAL_TLS_KEY_FILE', v.TEMPORAL_TLS_KEY_FILE);
    const tls: TemporalTls = {
      ...(v.TEMPORAL_TLS_SERVER_NAME === undefined ? {} : { serverNameOverride: v.TEMPORAL_TLS_SERVER_NAME }),
      ...(v.TEMPORAL_TLS_CA_FILE === undefined ? {} : { serverRootCACertificate: readCaFile('TEMPORAL_TLS_CA_FILE', v.TEMPORAL_TLS_CA_FILE) }),
      ...(clientCertPair === undefined ? {} : { clientCertPair }),
    };
    return { temporal: { ...settings, tls } };
  },
);

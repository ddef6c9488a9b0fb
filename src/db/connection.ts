/**
 * PostgreSQL connection settings from a libpq-style URL, TLS included:
 * `sslmode` (disable, require, verify-ca, verify-full), `sslrootcert` (a file, or `system`),
 * `sslcert` + `sslkey`, honoured as libpq does. slonik's own URL parser knows only three modes
 * and drops the certificate files, so the TLS parameters are taken off the URL here and handed
 * to the driver as Node TLS options.
 *
 * libpq semantics kept:
 * - `require` encrypts without verifying — unless a root certificate is given, then it
 *   verifies the chain like `verify-ca`;
 * - `verify-ca` verifies the chain, not the host name; `verify-full` both;
 * - no `sslmode`: as libpq's `prefer` cannot be done by the driver, a URL without `sslmode`
 *   connects in the clear unless certificates are named (then `verify-full`). `allow` and
 *   `prefer` are refused rather than silently weakened.
 * Messages never quote the URL: it may carry a password.
 */
import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';

export interface PostgresConnection {
  /** The URL without its TLS parameters (what slonik parses). */
  readonly url: string;
  /** `false`: plain TCP. */
  readonly ssl: false | ConnectionOptions;
}

export class ConnectionSettingsError extends Error {
  override name = 'ConnectionSettingsError';
}

const tlsParameters = ['sslmode', 'sslrootcert', 'sslcert', 'sslkey'] as const;
const modes = ['disable', 'require', 'verify-ca', 'verify-full'] as const;
type Mode = (typeof modes)[number];

export function postgresConnection(databaseUrl: string): PostgresConnection {
  let url: URL;
  try {
    url = new URL(databaseUrl);
  } catch {
    throw new ConnectionSettingsError('must be a postgres:// or postgresql:// URL');
  }
  if (!['postgres:', 'postgresql:'].includes(url.protocol)) throw new ConnectionSettingsError('must be a postgres:// or postgresql:// URL');
  const params = Object.fromEntries(tlsParameters.map((name) => [name, url.searchParams.get(name) ?? undefined])) as Record<
    (typeof tlsParameters)[number],
    string | undefined
  >;
  for (const name of tlsParameters) url.searchParams.delete(name);
  const stripped = url.toString();
  const rawMode = params.sslmode;
  if (rawMode !== undefined && !(modes as readonly string[]).includes(rawMode)) {
    throw new ConnectionSettingsError(
      `has sslmode=${rawMode}; use one of ${modes.join(', ')} (allow and prefer cannot be honoured: say disable or require)`,
    );
  }
  if ((params.sslcert === undefined) !== (params.sslkey === undefined)) throw new ConnectionSettingsError('needs sslcert and sslkey together');
  const named = params.sslrootcert !== undefined || params.sslcert !== undefined;
  const mode: Mode = (rawMode as Mode | undefined) ?? (named ? 'verify-full' : 'disable');
  if (mode === 'disable') return { url: stripped, ssl: false };

  const ca = params.sslrootcert === undefined || params.sslrootcert === 'system' ? undefined : readPem('sslrootcert', params.sslrootcert);
  if (mode !== 'require' && params.sslrootcert === undefined) {
    throw new ConnectionSettingsError(`has sslmode=${mode} but no sslrootcert (a CA file, or sslrootcert=system for the system's roots)`);
  }
  const ssl: ConnectionOptions = {
    ...(ca === undefined ? {} : { ca }),
    ...(params.sslcert === undefined ? {} : { cert: readPem('sslcert', params.sslcert), key: readPem('sslkey', params.sslkey!) }),
  };
  const verifyChain = mode !== 'require' || params.sslrootcert !== undefined;
  if (!verifyChain) return { url: stripped, ssl: { ...ssl, rejectUnauthorized: false } };
  if (mode === 'verify-full') return { url: stripped, ssl: { ...ssl, rejectUnauthorized: true } };
  // verify-ca (and require with a root certificate): the chain, not the name.
  return { url: stripped, ssl: { ...ssl, rejectUnauthorized: true, checkServerIdentity: () => undefined } };
}

function readPem(parameter: string, file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw new ConnectionSettingsError(`names ${parameter} ${file}, which cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}

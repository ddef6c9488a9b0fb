/**
 * Why PostgreSQL could not be used, in one secret-free line, and whether waiting can help:
 * a TLS handshake refused by either side or refused credentials are the configuration's to fix;
 * no answer (refused, timeout) or a closed connection may pass (a restart, a failover). An
 * error that is none of these is named as itself, never guessed at: "PostgreSQL is not
 * answering" for a TypeError sends the operator to the database instead of to the bug.
 */
import { connectionFailure, describeAlert } from '../process/connection-failure.js';

export interface DatabaseFailure {
  readonly reason: string;
  /** True when retrying cannot help until the configuration (or the code) changes. */
  readonly permanent: boolean;
}

const tlsCodes: Readonly<Record<string, string>> = {
  SELF_SIGNED_CERT_IN_CHAIN: 'the server certificate is not signed by the CA in sslrootcert',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'the server certificate is self-signed and not trusted',
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: 'the server certificate is not signed by the CA in sslrootcert',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'the server certificate is not signed by the CA in sslrootcert',
  CERT_HAS_EXPIRED: 'the server certificate has expired',
  ERR_TLS_CERT_ALTNAME_INVALID: 'the server certificate does not name the host in DATABASE_URL',
};

const clientCertificate = 'sslcert and sslkey in DATABASE_URL';

export function describeDatabaseFailure(error: unknown): DatabaseFailure {
  const failure = connectionFailure(error);
  if (failure?.kind === 'alert') return { reason: describeAlert('PostgreSQL', failure.alert, clientCertificate), permanent: true };
  for (let cause: unknown = error, depth = 0; cause instanceof Error && depth < 6; cause = cause.cause, depth++) {
    const code = (cause as { code?: string }).code ?? '';
    if (code in tlsCodes) return { reason: `TLS to PostgreSQL failed: ${tlsCodes[code]}`, permanent: true };
    if (/does not support SSL/i.test(cause.message))
      return { reason: 'PostgreSQL does not offer TLS but DATABASE_URL asks for it (sslmode)', permanent: true };
    if (code === '28P01' || code === '28000')
      return { reason: 'PostgreSQL refused our credentials (DATABASE_URL user or password)', permanent: true };
    if (code === '3D000') return { reason: 'the database in DATABASE_URL does not exist', permanent: true };
  }
  if (failure?.kind === 'no-answer') return { reason: `PostgreSQL did not answer (${failure.why})`, permanent: false };
  if (failure?.kind === 'closed') {
    const reason = failure.duringTls
      ? `PostgreSQL closed the connection during the TLS handshake, without an alert (does it accept our client certificate? ${clientCertificate})`
      : 'PostgreSQL closed the connection';
    return { reason, permanent: false };
  }
  return unexpected(error);
}

/**
 * Anything else, as itself. A server's own refusal (an SQLSTATE: starting up, too many
 * clients) may pass; a fault in our code or runtime (a TypeError) will not.
 */
function unexpected(error: unknown): DatabaseFailure {
  if (!(error instanceof Error)) return { reason: `unexpected failure: ${String(error)}`, permanent: false };
  const deepest = deepestCause(error);
  const code = (deepest as { code?: unknown }).code;
  if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code))
    return { reason: `PostgreSQL refused: ${firstLine(deepest.message)} (${code})`, permanent: false };
  const name = error.name === 'Error' ? error.constructor.name : error.name;
  const programming = [error, deepest].some((e) => e instanceof TypeError || e instanceof ReferenceError || e instanceof SyntaxError);
  const cause = deepest === error ? '' : ` (caused by ${deepest.name}: ${firstLine(deepest.message)})`;
  return { reason: `unexpected ${name}: ${firstLine(error.message)}${cause}`, permanent: programming };
}

function deepestCause(error: Error): Error {
  let deepest = error;
  for (let depth = 0; deepest.cause instanceof Error && depth < 6; depth++) deepest = deepest.cause;
  return deepest;
}

function firstLine(text: string): string {
  return text.split('\n')[0]!;
}

/**
 * Why PostgreSQL could not be used, in one secret-free line, and whether waiting can help:
 * a TLS verification failure or refused credentials are the configuration's to fix; a refused
 * connection or a timeout may pass (a restart, a failover).
 */
export interface DatabaseFailure {
  readonly reason: string;
  /** True when retrying cannot help until the configuration changes. */
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

export function describeDatabaseFailure(error: unknown): DatabaseFailure {
  for (let cause: unknown = error, depth = 0; cause instanceof Error && depth < 6; cause = cause.cause, depth++) {
    const code = (cause as { code?: string }).code ?? '';
    if (code in tlsCodes) return { reason: `TLS to PostgreSQL failed: ${tlsCodes[code]}`, permanent: true };
    if (/does not support SSL/i.test(cause.message))
      return { reason: 'PostgreSQL does not offer TLS but DATABASE_URL asks for it (sslmode)', permanent: true };
    if (code === '28P01' || code === '28000')
      return { reason: 'PostgreSQL refused our credentials (DATABASE_URL user or password)', permanent: true };
    if (code === '3D000') return { reason: 'the database in DATABASE_URL does not exist', permanent: true };
    if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'ETIMEDOUT' || /timeout/i.test(cause.message)) {
      return { reason: `PostgreSQL is unreachable (${code || 'timeout'})`, permanent: false };
    }
  }
  return { reason: 'PostgreSQL is not answering', permanent: false };
}

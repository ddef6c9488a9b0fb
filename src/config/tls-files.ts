/**
 * Certificate and key files named by TLS variables, read and checked once at start: a file
 * that cannot be read, is not PEM, or a key that does not belong to its certificate stops the
 * process with one line naming the variable.
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { ConfigError } from './errors.js';
import { readFile } from './env.js';

/** A PEM bundle of one or more CA certificates. */
export function readCaFile(variable: string, file: string): Buffer {
  const pem = readFile(variable, file);
  try {
    new X509Certificate(pem);
  } catch {
    throw new ConfigError(variable, `names a file that holds no PEM certificate (${file})`);
  }
  return pem;
}

export interface CertificatePair {
  readonly crt: Buffer;
  readonly key: Buffer;
}

/** A client certificate and its key: both or neither, and they must match. */
export function readCertificatePair(
  certVariable: string,
  certFile: string | undefined,
  keyVariable: string,
  keyFile: string | undefined,
): CertificatePair | undefined {
  if (certFile === undefined && keyFile === undefined) return undefined;
  if (certFile === undefined) throw new ConfigError(certVariable, `is required with ${keyVariable} (a client certificate and its key go together)`);
  if (keyFile === undefined) throw new ConfigError(keyVariable, `is required with ${certVariable} (a client certificate and its key go together)`);
  const crt = readFile(certVariable, certFile);
  const key = readFile(keyVariable, keyFile);
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(crt);
  } catch {
    throw new ConfigError(certVariable, `names a file that holds no PEM certificate (${certFile})`);
  }
  let privateKey;
  try {
    privateKey = createPrivateKey(key);
  } catch {
    throw new ConfigError(keyVariable, `names a file that holds no PEM private key (${keyFile})`);
  }
  if (!certificate.checkPrivateKey(privateKey)) throw new ConfigError(keyVariable, `is not the key of the certificate in ${certVariable}`);
  return { crt, key };
}

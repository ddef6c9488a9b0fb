/**
 * A private certificate authority for the dev stack and the tests: a CA and the server and
 * client certificates that TLS between the services needs (Temporal mTLS, NATS TLS,
 * PostgreSQL verify-full). ECDSA P-256, valid for a few days, written as PEM files; keys are
 * mode 0600. Development only: production certificates come from the operator's own PKI.
 */
import { webcrypto } from 'node:crypto';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
// @peculiar/x509 resolves its services through tsyringe, which needs the Reflect metadata API.
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

type KeyPair = webcrypto.CryptoKeyPair;

const algorithm = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const validDays = 7;

export interface IssuedCertificate {
  readonly certFile: string;
  readonly keyFile: string;
  readonly certPem: string;
  readonly keyPem: string;
}

export interface IssueOptions {
  /** DNS names and IP addresses the certificate is valid for (servers). */
  readonly dnsNames?: readonly string[];
  readonly ips?: readonly string[];
  /** Usable as a TLS server certificate, a client certificate, or both. */
  readonly usage: 'server' | 'client' | 'both';
}

export interface CertificateAuthority {
  readonly name: string;
  readonly caFile: string;
  readonly caPem: string;
  issue(name: string, options: IssueOptions): Promise<IssuedCertificate>;
}

/** Creates a CA named `name` whose files live in `dir`. */
export async function createCertificateAuthority(dir: string, name: string): Promise<CertificateAuthority> {
  mkdirSync(dir, { recursive: true });
  const keys = (await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify'])) as KeyPair;
  const { notBefore, notAfter } = validity();
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    name: `CN=${name}`,
    keys,
    notBefore,
    notAfter,
    signingAlgorithm: algorithm,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  const caPem = ca.toString('pem');
  const caFile = path.join(dir, `${name}-ca.pem`);
  writeFileSync(caFile, caPem);
  return {
    name,
    caFile,
    caPem,
    async issue(leafName, options) {
      const leafKeys = (await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify'])) as KeyPair;
      const usages = {
        server: [x509.ExtendedKeyUsage.serverAuth],
        client: [x509.ExtendedKeyUsage.clientAuth],
        both: [x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth],
      }[options.usage];
      const names = [
        ...(options.dnsNames ?? []).map((value) => ({ type: 'dns' as const, value })),
        ...(options.ips ?? []).map((value) => ({ type: 'ip' as const, value })),
      ];
      const leaf = await x509.X509CertificateGenerator.create({
        subject: `CN=${leafName}`,
        issuer: ca.subject,
        notBefore,
        notAfter,
        signingKey: keys.privateKey,
        publicKey: leafKeys.publicKey,
        signingAlgorithm: algorithm,
        extensions: [
          new x509.BasicConstraintsExtension(false, undefined, true),
          new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyAgreement, true),
          new x509.ExtendedKeyUsageExtension(usages),
          ...(names.length > 0 ? [new x509.SubjectAlternativeNameExtension(names)] : []),
          await x509.AuthorityKeyIdentifierExtension.create(keys.publicKey),
        ],
      });
      const certPem = leaf.toString('pem');
      const keyPem = pemKey(await webcrypto.subtle.exportKey('pkcs8', leafKeys.privateKey));
      const certFile = path.join(dir, `${leafName}.pem`);
      const keyFile = path.join(dir, `${leafName}-key.pem`);
      writeFileSync(certFile, certPem);
      writeFileSync(keyFile, keyPem, { mode: 0o600 });
      chmodSync(keyFile, 0o600);
      return { certFile, keyFile, certPem, keyPem };
    },
  };
}

function validity(): { notBefore: Date; notAfter: Date } {
  // A minute back: a peer whose clock is slightly behind still accepts the certificate.
  const notBefore = new Date(Date.now() - 60_000);
  return { notBefore, notAfter: new Date(notBefore.getTime() + validDays * 86_400_000) };
}

function pemKey(der: ArrayBuffer): string {
  const base64 = Buffer.from(der)
    .toString('base64')
    .replace(/(.{64})/g, '$1\n');
  return `-----BEGIN PRIVATE KEY-----\n${base64}${base64.endsWith('\n') ? '' : '\n'}-----END PRIVATE KEY-----\n`;
}

import { randomBytes, webcrypto } from 'node:crypto';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as x509 from '@peculiar/x509';

// @peculiar/x509 signs with WebCrypto; Node's is a full implementation.
x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

/** ECDSA P-256 with SHA-256: small keys, made in milliseconds, accepted by PostgreSQL and Node. */
const ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
type CryptoKeyPair = webcrypto.CryptoKeyPair;
const DAY_MS = 24 * 60 * 60 * 1000;

/** A certificate and its private key, both PEM. */
export interface TestCertificate {
  /** The certificate, PEM. */
  readonly certPem: string;
  /** Its PKCS #8 private key, PEM. */
  readonly keyPem: string;
  /** SHA-256 fingerprint as Node's `getPeerCertificate().fingerprint256` prints it. */
  readonly fingerprint256: string;
}

/** What {@link TestCa.issue} puts in a certificate. */
export interface IssueOptions {
  /** Subject CN; for a client certificate, the PostgreSQL user `cert` authentication logs in as. */
  readonly commonName: string;
  /** DNS names for subjectAltName (a server's host names). */
  readonly dnsNames?: readonly string[];
  /** IP addresses for subjectAltName (`127.0.0.1` for the harness's servers). */
  readonly ipAddresses?: readonly string[];
  /** Start of validity; one day ago by default. A future date makes a not-yet-valid certificate. */
  readonly notBefore?: Date;
  /** End of validity; 30 days ahead by default. A past date makes an expired certificate. */
  readonly notAfter?: Date;
}

/**
 * A certificate authority made by the tests: a self-signed CA certificate that issues
 * server and client certificates, any validity window included (expired, not yet valid).
 */
export class TestCa implements TestCertificate {
  /** @internal use {@link createTestCa} */
  constructor(
    readonly name: string,
    readonly certPem: string,
    readonly keyPem: string,
    readonly fingerprint256: string,
    readonly certificate: x509.X509Certificate,
    readonly keys: CryptoKeyPair,
  ) {}

  /** Issues a leaf certificate (server and client use) signed by this CA. */
  async issue(options: IssueOptions): Promise<TestCertificate> {
    const keys = await generateKeys();
    const altNames: x509.JsonGeneralName[] = [
      ...(options.dnsNames ?? []).map((value) => ({ type: 'dns' as const, value })),
      ...(options.ipAddresses ?? []).map((value) => ({ type: 'ip' as const, value })),
    ];
    const extensions: x509.Extension[] = [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyAgreement,
        true,
      ),
      new x509.ExtendedKeyUsageExtension([
        x509.ExtendedKeyUsage.serverAuth,
        x509.ExtendedKeyUsage.clientAuth,
      ]),
      await x509.AuthorityKeyIdentifierExtension.create(this.certificate),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ];
    if (altNames.length > 0) extensions.push(new x509.SubjectAlternativeNameExtension(altNames));
    const certificate = await x509.X509CertificateGenerator.create({
      serialNumber: serialNumber(),
      subject: `CN=${options.commonName}`,
      issuer: this.certificate.subject,
      notBefore: options.notBefore ?? new Date(Date.now() - DAY_MS),
      notAfter: options.notAfter ?? new Date(Date.now() + 30 * DAY_MS),
      signingAlgorithm: ALGORITHM,
      publicKey: keys.publicKey,
      signingKey: this.keys.privateKey,
      extensions,
    });
    return toPem(certificate, keys);
  }
}

/** Makes a new CA, valid from a day ago for a year. */
export async function createTestCa(name = 'hotload test CA'): Promise<TestCa> {
  const keys = await generateKeys();
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serialNumber(),
    name: `CN=${name} ${randomBytes(3).toString('hex')}`,
    notBefore: new Date(Date.now() - DAY_MS),
    notAfter: new Date(Date.now() + 365 * DAY_MS),
    signingAlgorithm: ALGORITHM,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  const pem = await toPem(certificate, keys);
  return new TestCa(name, pem.certPem, pem.keyPem, pem.fingerprint256, certificate, keys);
}

/**
 * Writes TLS files the way a Secret volume holds them: `0600` for the key (libpq and
 * PostgreSQL refuse a key others can read), `0644` for certificates. Returns the paths.
 */
export function writeTlsFiles(
  dir: string,
  files: { readonly ca?: string; readonly cert?: string; readonly key?: string },
  names: { readonly ca: string; readonly cert: string; readonly key: string } = {
    ca: 'root.crt',
    cert: 'client.crt',
    key: 'client.key',
  },
): { ca: string; cert: string; key: string } {
  mkdirSync(dir, { recursive: true });
  const paths = { ca: join(dir, names.ca), cert: join(dir, names.cert), key: join(dir, names.key) };
  if (files.ca !== undefined) writeFileSync(paths.ca, files.ca, { mode: 0o644 });
  if (files.cert !== undefined) writeFileSync(paths.cert, files.cert, { mode: 0o644 });
  if (files.key !== undefined) {
    writeFileSync(paths.key, files.key, { mode: 0o600 });
    chmodSync(paths.key, 0o600); // an existing file keeps its mode through writeFileSync
  }
  return paths;
}

function generateKeys(): Promise<CryptoKeyPair> {
  return webcrypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify']) as Promise<CryptoKeyPair>;
}

/** A positive serial number (the top bit clear), random so re-issued certificates differ. */
function serialNumber(): string {
  const bytes = randomBytes(12);
  bytes[0] = bytes[0]! & 0x7f;
  return bytes.toString('hex');
}

async function toPem(certificate: x509.X509Certificate, keys: CryptoKeyPair): Promise<TestCertificate> {
  const pkcs8 = await webcrypto.subtle.exportKey('pkcs8', keys.privateKey);
  const fingerprint = Buffer.from(await certificate.getThumbprint('SHA-256'));
  return {
    certPem: `${certificate.toString('pem')}\n`,
    keyPem: `${x509.PemConverter.encode(pkcs8, 'PRIVATE KEY')}\n`,
    fingerprint256: [...fingerprint]
      .map((byte) => byte.toString(16).padStart(2, '0').toUpperCase())
      .join(':'),
  };
}

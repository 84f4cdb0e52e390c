import { createPrivateKey, type KeyObject, X509Certificate } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { SourceError } from '../errors.js';

/** The TLS files a source names, read and checked as libpq checks them before it connects. */
export interface ClientTlsFiles {
  readonly ca: string | undefined;
  readonly cert: string | undefined;
  readonly key: string | undefined;
}

/**
 * Reads `sslrootcert`, `sslcert` and `sslkey` and refuses, as libpq does, a private key
 * that others can read, a key that is not the certificate's, and a client certificate
 * outside its validity window (the server would refuse it: better said here, naming
 * the file, than as a TLS alert). Every failure is a `SourceError` naming the key and file.
 */
export function readClientTlsFiles(params: Readonly<Record<string, string>>): ClientTlsFiles {
  const ca = params.sslrootcert ? readTlsFile(params.sslrootcert, 'sslrootcert') : undefined;
  const cert = params.sslcert ? readTlsFile(params.sslcert, 'sslcert') : undefined;
  let key: string | undefined;
  if (params.sslkey) {
    checkKeyPermissions(params.sslkey);
    key = readTlsFile(params.sslkey, 'sslkey');
  }
  if (cert !== undefined) {
    const certificate = parseCertificate(cert, params.sslcert!);
    checkValidity(certificate, params.sslcert!);
    if (key !== undefined) checkKeyMatches(certificate, parseKey(key, params.sslkey!), params);
  }
  return { ca, cert, key };
}

/**
 * Reads a TLS file the source names. A failure is the source's fault (it names a file
 * that is not there, or not readable), so it is a `SourceError` naming the key and path.
 */
function readTlsFile(path: string, key: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    const errno = (error as NodeJS.ErrnoException).code;
    throw tlsFileError(
      errno === 'ENOENT' ? 'missing' : 'unreadable',
      path,
      key,
      `cannot read the ${key} file named by the source`,
      errno,
    );
  }
}

/**
 * libpq's rule (fe-secure-openssl.c): a key owned by the user that reads it must not be
 * accessible to group or others (`0600` or less); one owned by root may be group-readable
 * (`0640` or less, a Kubernetes Secret volume with an `fsGroup`). Not checked on Windows.
 */
function checkKeyPermissions(path: string): void {
  const euid = process.geteuid?.();
  if (euid === undefined) return;
  let mode: number;
  let uid: number;
  try {
    ({ mode, uid } = statSync(path));
  } catch (error) {
    const errno = (error as NodeJS.ErrnoException).code;
    throw tlsFileError(
      errno === 'ENOENT' ? 'missing' : 'unreadable',
      path,
      'sslkey',
      'cannot read the sslkey file named by the source',
      errno,
    );
  }
  const tooOpen = (uid === euid && (mode & 0o077) !== 0) || (uid === 0 && (mode & 0o037) !== 0);
  if (tooOpen) {
    throw tlsFileError(
      'unreadable',
      path,
      'sslkey',
      `the private key file has group or world access (mode ${(mode & 0o777).toString(8).padStart(4, '0')}); ` +
        'libpq requires u=rw (0600) or less if owned by the current user, u=rw,g=r (0640) or less if owned by root ' +
        '(a Kubernetes Secret volume: defaultMode 0600, or 0640 with an fsGroup)',
    );
  }
}

function parseCertificate(pem: string, path: string): X509Certificate {
  try {
    return new X509Certificate(pem);
  } catch {
    throw tlsFileError('malformed', path, 'sslcert', 'not a PEM certificate');
  }
}

function parseKey(pem: string, path: string): KeyObject {
  try {
    return createPrivateKey(pem);
  } catch {
    throw tlsFileError('malformed', path, 'sslkey', 'not an unencrypted PEM private key');
  }
}

function checkValidity(certificate: X509Certificate, path: string): void {
  const now = Date.now();
  if (Date.parse(certificate.validFrom) > now) {
    throw tlsFileError(
      'invalid-value',
      path,
      'sslcert',
      `the client certificate is not valid before ${certificate.validFrom}`,
    );
  }
  if (Date.parse(certificate.validTo) < now) {
    throw tlsFileError(
      'invalid-value',
      path,
      'sslcert',
      `the client certificate expired on ${certificate.validTo}`,
    );
  }
}

function checkKeyMatches(
  certificate: X509Certificate,
  key: KeyObject,
  params: Readonly<Record<string, string>>,
): void {
  if (certificate.checkPrivateKey(key)) return;
  throw tlsFileError(
    'invalid-value',
    params.sslkey!,
    'sslkey',
    `the private key does not match the client certificate in ${params.sslcert}`,
  );
}

function tlsFileError(
  code: 'missing' | 'unreadable' | 'malformed' | 'invalid-value',
  file: string,
  key: string,
  problem: string,
  errno?: string,
): SourceError {
  return new SourceError({ code, source: `${key} of the connection source`, file, key, problem, errno });
}

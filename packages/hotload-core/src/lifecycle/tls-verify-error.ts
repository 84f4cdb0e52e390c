import type { ConnectionConfig, HostPort } from '../config.js';

/** Which TLS check a connection failed (see {@link TlsVerifyError}). */
export type TlsCheck = 'chain' | 'expired' | 'not-yet-valid' | 'host-name' | 'client-certificate';

/**
 * A candidate's TLS handshake failed one of the checks its sslmode asks for. Node's and
 * the server's own errors say what failed but not which of the source's files to look
 * at: this one names the check, the file (`sslrootcert` for the server's certificate,
 * `sslcert` for ours) and the host, and keeps the original as `cause` (its `code`, e.g.
 * `CERT_HAS_EXPIRED`, as `tlsCode`). Reported by `verifyFailed`; the serving generation
 * stays, as with any failed verify.
 */
export class TlsVerifyError extends Error {
  /** Always `TlsVerifyError`. */
  override readonly name = 'TlsVerifyError';
  /** `tls-<check>` (`tls-chain`, `tls-host-name` ...): what a redacted copy of this error keeps. */
  readonly code: `tls-${TlsCheck}`;

  constructor(
    /** The check that failed. */
    readonly check: TlsCheck,
    /** The file to look at (a path, never content); `undefined` when the source names none (system CAs). */
    readonly file: string | undefined,
    /** The source's sslmode. */
    readonly sslmode: string,
    /** Node's or the server's error code (`CERT_HAS_EXPIRED`, `ERR_TLS_CERT_ALTNAME_INVALID`, `28000` ...). */
    readonly tlsCode: string,
    message: string,
    cause: unknown,
  ) {
    super(message, { cause });
    this.code = `tls-${check}`;
  }
}

const CHAIN_CODES = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_SIGNATURE_FAILURE',
  'CERT_UNTRUSTED',
]);

/** TLS alerts the server sends about our certificate (OpenSSL's names, as Node codes them). */
const CLIENT_CERT_ALERT =
  /^ERR_SSL_(TLSV1|SSLV3|TLSV13)_ALERT_(UNKNOWN_CA|CERTIFICATE_EXPIRED|BAD_CERTIFICATE|CERTIFICATE_REQUIRED|CERTIFICATE_UNKNOWN|DECRYPT_ERROR)$/;

/**
 * The error a candidate's connect failed with, as a {@link TlsVerifyError} when it is a
 * TLS check the source's files decide; any other error as it is.
 */
export function describeTlsFailure(config: ConnectionConfig, host: HostPort, error: unknown): unknown {
  const sslmode = config.sslmode;
  if (sslmode === undefined || error === null || typeof error !== 'object') return error;
  const code = String((error as { code?: unknown }).code ?? '');
  const where = `${host.host}:${host.port}`;
  const rootcert = config.params.sslrootcert;
  const trusted = rootcert === undefined ? 'the system CA store (no sslrootcert)' : `sslrootcert ${rootcert}`;
  const make = (check: TlsCheck, file: string | undefined, problem: string) =>
    new TlsVerifyError(
      check,
      file,
      sslmode,
      code,
      `TLS ${check} check failed (sslmode=${sslmode}) for ${where}: ${problem} (${code})`,
      error,
    );
  if (CHAIN_CODES.has(code)) {
    return make('chain', rootcert, `the server's certificate is not signed by a CA in ${trusted}`);
  }
  if (code === 'CERT_HAS_EXPIRED')
    return make('expired', rootcert, `the server's certificate (or a CA in ${trusted}) has expired`);
  if (code === 'CERT_NOT_YET_VALID') {
    return make(
      'not-yet-valid',
      rootcert,
      `the server's certificate (or a CA in ${trusted}) is not valid yet`,
    );
  }
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
    return make(
      'host-name',
      rootcert,
      `the server's certificate does not name the host "${host.host}" (verify-full checks it; verify-ca does not)`,
    );
  }
  const sslcert = config.params.sslcert;
  if (
    CLIENT_CERT_ALERT.test(code) ||
    (code === '28000' && /certificate/i.test((error as Error).message ?? ''))
  ) {
    const ours = sslcert === undefined ? 'no sslcert was sent' : `sslcert ${sslcert}`;
    return make('client-certificate', sslcert, `the server refused the client certificate (${ours})`);
  }
  // TLS 1.3 checks the client's certificate after the client's side of the handshake is
  // done: a client that writes its startup packet at once (postgres.js) may meet the closed
  // socket before it reads the server's alert. With a certificate sent, say what it most
  // likely was, and that the server may simply have gone away.
  if (sslcert !== undefined && (code === 'ECONNRESET' || code === 'EPIPE')) {
    return make(
      'client-certificate',
      sslcert,
      `the server closed the connection right after the TLS handshake, as it does when it refuses the client certificate (sslcert ${sslcert}); or the server went away`,
    );
  }
  return error;
}

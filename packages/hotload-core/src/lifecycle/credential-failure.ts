/**
 * The SQLSTATEs of a login the server refused for its credentials: `invalid_password`
 * (28P01) and `invalid_authorization_specification` (28000). One list for the drivers (wait
 * for a credential change) and the claim reconciler (repair the published password).
 */
export const CREDENTIAL_FAILURE_CODES: readonly string[] = ['28P01', '28000'];

/**
 * The server refused the credentials ({@link CREDENTIAL_FAILURE_CODES}). The secret may
 * have changed without a file event the watcher saw (a libpq environment source, a missed
 * event): worth a re-read.
 */
export function isCredentialFailure(err: Error): boolean {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' && CREDENTIAL_FAILURE_CODES.includes(code);
}

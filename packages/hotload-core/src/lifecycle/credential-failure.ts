/**
 * The server refused the credentials: `invalid_password` or
 * `invalid_authorization_specification`. The secret may have changed without a file
 * event the watcher saw (a libpq environment source, a missed event): worth a re-read.
 */
export function isCredentialFailure(err: Error): boolean {
  const code = (err as { code?: unknown }).code;
  return code === '28P01' || code === '28000';
}

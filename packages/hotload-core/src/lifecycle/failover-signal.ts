/**
 * Errors that may mean the primary moved: the server is read-only (`25006`), the
 * connection failed or was dropped (SQLSTATE classes 08 and 57P, socket errors, pg's
 * "Connection terminated"). Query errors (syntax, constraints, ...) are not.
 */
export function isFailoverSignal(err: Error): boolean {
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (code === '25006' || code.startsWith('08') || code.startsWith('57P')) return true;
    if (/^E[A-Z]+$/.test(code)) return true; // ECONNREFUSED, ECONNRESET, EPIPE, ETIMEDOUT, ...
    return false;
  }
  return /Connection terminated|connection timeout|timeout expired|CONNECTION_(CLOSED|ENDED|DESTROYED)/i.test(
    err.message,
  );
}

/** postgres.js's codes for a connection lost or not made. */
const POSTGRES_JS_CONNECTION_CODES = new Set([
  'CONNECTION_CLOSED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
]);

/**
 * Errors that may mean the primary moved: the server is read-only (`25006`), the
 * connection failed or was dropped (SQLSTATE classes 08 and 57P, socket errors, pg's
 * "Connection terminated" and "not queryable", postgres.js's `CONNECTION_CLOSED`). Query errors (syntax,
 * constraints, ...) are not.
 */
export function isFailoverSignal(err: Error): boolean {
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (code === '25006' || code.startsWith('08') || code.startsWith('57P')) return true;
    if (POSTGRES_JS_CONNECTION_CODES.has(code)) return true;
    return /^E[A-Z]+$/.test(code); // ECONNREFUSED, ECONNRESET, EPIPE, ETIMEDOUT, ...
  }
  // pg: a dropped socket, a connect that timed out, a client whose connection died while idle.
  return /Connection terminated|connection timeout|timeout expired|not queryable/i.test(err.message);
}

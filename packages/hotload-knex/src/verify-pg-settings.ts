import type { PgSettings } from './pg-settings.js';

/** The part of pg's `Client` a verification uses. */
interface VerifyClient {
  connect(): Promise<unknown>;
  query(sql: string): Promise<unknown>;
  end(): Promise<void>;
  on(event: 'error', listener: (error: Error) => void): unknown;
}

/** The part of the pg module a verification uses. */
export interface PgClientConstructor {
  Client: new (settings: PgSettings) => VerifyClient;
}

/**
 * Proves that settings work before any pooled connection uses them: opens one
 * connection, runs `SELECT 1`, closes it. Rejects with the driver's error; gives up
 * after `timeoutMillis` (connect and query each), or at once when `signal` aborts.
 */
export async function verifyPgSettings(
  pg: PgClientConstructor,
  settings: PgSettings,
  timeoutMillis: number,
  signal?: AbortSignal,
): Promise<void> {
  const probe = new pg.Client({
    ...settings,
    // Spread drops the non-enumerable password: carry it over explicitly.
    password: settings.password,
    connectionTimeoutMillis: settings.connectionTimeoutMillis ?? timeoutMillis,
    query_timeout: timeoutMillis,
  });
  // A socket error after connect is reported through the pending call; without a
  // listener it would crash the process instead.
  probe.on('error', () => {});
  // pg's end() on a client still connecting destroys its socket: the pending call fails now.
  const abort = () => void probe.end().catch(() => {});
  signal?.addEventListener('abort', abort, { once: true });
  try {
    signal?.throwIfAborted();
    await probe.connect();
    await probe.query('SELECT 1');
  } finally {
    signal?.removeEventListener('abort', abort);
    await probe.end().catch(() => {});
  }
}

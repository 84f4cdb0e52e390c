import type pg from 'pg';
import type { Generation } from './generation.js';

/**
 * Proves a candidate generation works: checks a client out of it, runs `SELECT 1` (and
 * the user's `prepare` hook, if any) and gives the client back, where it stays as a warm
 * idle client for the first queries after the switch. Rejects with the connect, query or
 * hook error, or after `timeoutMillis`. With `requireWritable` (target_session_attrs
 * `read-write`), a server answering `SHOW transaction_read_only` with `on` (a standby, or
 * a read-only session) fails it too, before the hook runs.
 */
export function verifyGeneration(
  candidate: Generation,
  timeoutMillis: number,
  prepare?: (client: pg.PoolClient) => Promise<void>,
  requireWritable = false,
): Promise<void> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const settle = (err: Error | undefined): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (err === undefined) resolve();
      else reject(err);
    };
    const timer = setTimeout(
      () => settle(new Error(`verify timed out after ${timeoutMillis} ms (verifyTimeoutMillis)`)),
      timeoutMillis,
    );
    timer.unref(); // the verify's socket keeps the process alive while it matters
    candidate.checkout((err, client, release) => {
      if (err !== undefined || client === undefined) return settle(err);
      // The socket may die mid-verify; without a listener pg would crash the process.
      const onError = (socketError: Error): void => settle(socketError);
      client.on('error', onError);
      const finish = (error: Error | undefined): void => {
        client.removeListener('error', onError);
        release(error);
        settle(error);
      };
      const runPrepare = (): void => {
        if (!prepare) {
          finish(undefined);
          return;
        }
        prepare(client).then(
          () => finish(undefined),
          (hookError: unknown) =>
            finish(
              hookError instanceof Error ? hookError : new Error(`prepare hook failed: ${String(hookError)}`),
            ),
        );
      };
      client.query('SELECT 1', (queryError: Error | null | undefined) => {
        if (queryError) return finish(queryError);
        if (!requireWritable) return runPrepare();
        client.query('SHOW transaction_read_only', (showError: Error | null, result: pg.QueryResult) => {
          if (showError) return finish(showError);
          if (result.rows[0]?.transaction_read_only !== 'off') {
            return finish(new ReadOnlyHostError(candidate.pool.options.host, candidate.pool.options.port));
          }
          runPrepare();
        });
      });
    }, true);
  });
}

/** A candidate's host is read-only while `target_session_attrs` asks for a writable one. */
export class ReadOnlyHostError extends Error {
  constructor(host: string | undefined, port: number | undefined) {
    super(`${host ?? '?'}:${port ?? '?'} is read-only (target_session_attrs=read-write)`);
    this.name = 'ReadOnlyHostError';
  }
}

import type { Generation } from './generation.js';

/**
 * Proves a candidate generation works: checks a client out of it, runs `SELECT 1` and
 * gives the client back, where it stays as a warm idle client for the first queries
 * after the switch. Rejects with the connect or query error, or after `timeoutMillis`.
 */
export function verifyGeneration(candidate: Generation, timeoutMillis: number): Promise<void> {
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
    candidate.checkout((err, client, release) => {
      if (err !== undefined || client === undefined) return settle(err);
      // The socket may die mid-verify; without a listener pg would crash the process.
      const onError = (socketError: Error): void => settle(socketError);
      client.on('error', onError);
      client.query('SELECT 1', (queryError: Error | null | undefined) => {
        client.removeListener('error', onError);
        release(queryError ?? undefined);
        settle(queryError ?? undefined);
      });
    }, true);
  });
}

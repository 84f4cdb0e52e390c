/**
 * A bounded write pause on the source: its replicated tables locked in EXCLUSIVE mode (reads
 * go on; INSERT, UPDATE and DELETE queue behind the lock) on a connection of its own, so
 * the target can confirm the source's last position while nothing new is written. Writers
 * arriving while the lock is still being acquired queue too, so the pause starts when the
 * lock is asked for; `lock_timeout` bounds that part. A connection that dies (a killed
 * reconciler) ends the transaction and with it the pause: nothing is left behind.
 */
import type { SqlClient } from './sql-client.js';

/** Runs `work` on a connection of its own to the source database. */
type Session = <T>(work: (client: SqlClient) => Promise<T>) => Promise<T>;

/** A fence being held. */
export interface WriteFence {
  /** `performance.now()` when the lock was asked for (writes queue from then). */
  readonly since: number;
  /** Releases the lock (idempotent); resolves with how long writes were paused, in ms. */
  lower(): Promise<number>;
}

/**
 * Locks `tables` (qualified names) on a new session. Rejects, with nothing held, when the
 * lock is not granted within `lockTimeoutMillis` (55P03, a long transaction in the way).
 */
export function raiseWriteFence(
  session: Session,
  tables: readonly string[],
  lockTimeoutMillis: number,
): Promise<WriteFence> {
  return new Promise<WriteFence>((resolve, reject) => {
    let release: () => void = () => {};
    const released = new Promise<void>((done) => {
      release = done;
    });
    let since = 0;
    let raised = false;
    const closed = session(async (client) => {
      await client.query('BEGIN');
      try {
        await client.query(`SET LOCAL lock_timeout = ${Math.max(1, Math.round(lockTimeoutMillis))}`);
        since = performance.now();
        if (tables.length > 0) await client.query(`LOCK TABLE ${tables.join(', ')} IN EXCLUSIVE MODE`);
        raised = true;
        resolve({ since, lower });
        await released;
      } finally {
        await client.query('ROLLBACK').catch(() => {});
      }
    }).catch((error: unknown) => {
      if (!raised) reject(error);
    });
    let pausedMillis: number | undefined;
    async function lower(): Promise<number> {
      release();
      await closed;
      pausedMillis ??= performance.now() - since;
      return pausedMillis;
    }
  });
}

/**
 * pg-pool's internal lists, read in this one file.
 *
 * pg-pool keeps every client it opened in `_clients` (connecting, idle and checked out),
 * its idle ones in `_idle` (items `{ client, idleListener, timeoutId }`) and the checkouts
 * waiting for a client in `_pendingQueue` (items `{ callback }`). pg's typings do not
 * declare them, but they have had these names and shapes since pg-pool 2 (every pg 8.x
 * ships pg-pool 3), and code and tests written against pg-pool read them
 * (`pool._clients[0].end()`, `pool._idle.length`). hotload-pg reads them for a
 * generation's clients still connecting (a drain destroys a handshake that would hold it)
 * and for the hotload Pool's own `_clients`, `_idle` and `_pendingQueue`. If a list
 * vanished it reads as empty: a drain would then wait for a connecting client's own
 * timeout, and the Pool's lists would be empty.
 */
import type pg from 'pg';

/** An item of pg-pool's `_idle`. */
export interface PgPoolIdleItem {
  readonly client: pg.PoolClient;
}

/** An item of pg-pool's `_pendingQueue`. */
export interface PgPoolPendingItem {
  readonly callback: (...args: never[]) => void;
}

function listOf<T>(pool: pg.Pool, name: '_clients' | '_idle' | '_pendingQueue'): readonly T[] {
  const list = (pool as unknown as Record<string, unknown>)[name];
  return Array.isArray(list) ? (list as T[]) : [];
}

/** pg-pool's `_clients`: connecting, idle and checked-out clients. */
export function clientsOf(pool: pg.Pool): readonly pg.PoolClient[] {
  return listOf(pool, '_clients');
}

/** pg-pool's `_idle`. */
export function idleItemsOf(pool: pg.Pool): readonly PgPoolIdleItem[] {
  return listOf(pool, '_idle');
}

/** pg-pool's `_pendingQueue`. */
export function pendingItemsOf(pool: pg.Pool): readonly PgPoolPendingItem[] {
  return listOf(pool, '_pendingQueue');
}

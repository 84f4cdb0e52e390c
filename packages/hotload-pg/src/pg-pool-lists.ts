/**
 * pg-pool's private lists, `_clients` (every client, connecting ones included), `_idle`
 * (its idle items) and `_pendingQueue` (its waiting checkouts, items `{ callback }`), as
 * programs and test suites read them: node-postgres' own tests take
 * `pool._clients[0].connection.stream`, pg-pool's check `pool._idle.length`, monitoring
 * code logs `pool._clients.length`. A hotload Pool pools nothing itself (its generations
 * do, each a real pg-pool), so on it these are read-only views over its generations'
 * lists, joined oldest generation first (pg-pool appends, so the oldest client comes
 * first, as in one pg-pool). A generation also reads its pg-pool's `_clients` for the
 * clients still connecting (a drain destroys a handshake that would hold it). All three
 * lists exist under these names in every pg-pool of pg 8 (pg-pool 3.x); if a pg-pool
 * dropped one, it would read empty for that generation, nothing else.
 */
import type pg from 'pg';

/** An item of pg-pool's `_pendingQueue`. */
export interface PgPoolPendingItem {
  readonly callback: (...args: never[]) => void;
}

/** pg-pool's `_clients` of one pool: connecting, idle and checked-out clients. */
export function clientsOf(pool: pg.Pool): readonly pg.PoolClient[] {
  return listOf(pool, '_clients');
}

/** pg-pool's `_idle` of one pool (its idle items). */
export function idleItemsOf(pool: pg.Pool): readonly unknown[] {
  return listOf(pool, '_idle');
}

/** pg-pool's `_pendingQueue` of one pool. */
export function pendingItemsOf(pool: pg.Pool): readonly PgPoolPendingItem[] {
  return listOf(pool, '_pendingQueue');
}

function listOf<T>(pool: pg.Pool, name: '_clients' | '_idle' | '_pendingQueue'): readonly T[] {
  const list = (pool as unknown as Record<string, unknown>)[name];
  return Array.isArray(list) ? (list as T[]) : [];
}

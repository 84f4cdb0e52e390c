/**
 * pg-pool's private client lists, `_clients` (every client, connecting ones included) and
 * `_idle` (its idle items), as programs and test suites read them: node-postgres' own
 * tests take `pool._clients[0].connection.stream`, monitoring code logs
 * `pool._clients.length`. A hotload Pool pools nothing itself (its generations do, each a
 * real pg-pool), so on it these are read-only views over its generations' lists, joined
 * oldest generation first (pg-pool appends, so the oldest client comes first, as in one
 * pg-pool). Both lists exist under these names in every pg-pool of pg 8 (pg-pool 3.x); if a
 * pg-pool dropped one, its view would read empty for that generation, nothing else.
 */
import type pg from 'pg';

const LISTS = ['_clients', '_idle'] as const;

/**
 * Defines `_clients` and `_idle` on `prototype` as views over the pg-pools `poolsOf`
 * returns for an instance. Writes are ignored: pg-pool's constructor initialises both on
 * the outer pool, which never uses them.
 */
export function defineClientListViews<T>(prototype: T, poolsOf: (instance: T) => Iterable<pg.Pool>): void {
  for (const name of LISTS) {
    Object.defineProperty(prototype, name, {
      configurable: true,
      get(this: T): unknown[] {
        const joined: unknown[] = [];
        for (const pool of poolsOf(this)) joined.push(...((pool as unknown as PgPoolLists)[name] ?? []));
        return joined;
      },
      set() {},
    });
  }
}

type PgPoolLists = Partial<Record<(typeof LISTS)[number], unknown[]>>;

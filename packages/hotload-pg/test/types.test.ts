/** Compile-time checks (run by `tsc`): a hotload Pool is usable wherever a pg.Pool is expected. */
import { createPgModule, Pool, type SwitchEvent } from 'hotload-pg';
import type pg from 'pg';
import { describe, expectTypeOf, it } from 'vitest';

describe('types', () => {
  it('makes Pool assignable to pg.Pool, with pg typings for query/connect/end/events', () => {
    const pool = new Pool({ max: 1 });
    const asPg: pg.Pool = pool;
    expectTypeOf(asPg).toEqualTypeOf<pg.Pool>();
    const query = () => pool.query<{ n: number }>('SELECT 1 AS n');
    expectTypeOf(query).returns.toEqualTypeOf<Promise<pg.QueryResult<{ n: number }>>>();
    const connect = () => pool.connect();
    expectTypeOf(connect).returns.toEqualTypeOf<Promise<pg.PoolClient>>();
    pool.on('switch', (event) => expectTypeOf(event).toEqualTypeOf<SwitchEvent>());
    pool.on('error', (err, client) => {
      expectTypeOf(err).toEqualTypeOf<Error>();
      expectTypeOf(client).toEqualTypeOf<pg.PoolClient>();
    });
    const takesPgModule = (module: { Pool: new (config?: pg.PoolConfig) => pg.Pool }) => module;
    takesPgModule(createPgModule());
    void pool.end();
  });
});

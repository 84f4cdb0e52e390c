/**
 * What an app typed against its own @types/pg writes. types.test.ts compiles this file
 * against the @types/pg hotload-pg is built with and against the oldest supported one
 * (`pg-old-types`): every line must compile with both.
 */
import hotloadPg, { createPgModule, Pool, type SwitchEvent } from 'hotload-pg';
import type pg from 'pg';
import { expectTypeOf } from 'vitest';

export async function usedAsPgPool(): Promise<void> {
  const pool = new Pool({ max: 1, hotload: { drainTimeoutMillis: 1_000 } });
  const asPg: pg.Pool = pool;
  const viaDefault: pg.Pool = new hotloadPg.Pool({ max: 1 });
  const pgModule: typeof pg = hotloadPg;
  const builtModule: typeof pg = createPgModule({ drainTimeoutMillis: 1_000 });
  const rows = (await pool.query<{ n: number }>('SELECT 1 AS n')).rows;
  expectTypeOf(rows).toEqualTypeOf<{ n: number }[]>();
  const client = await pool.connect();
  expectTypeOf(client).toEqualTypeOf<pg.PoolClient>();
  client.release();
  pool.connect((err, connected, done) => {
    expectTypeOf(err).toEqualTypeOf<Error | undefined>();
    expectTypeOf(connected).toEqualTypeOf<pg.PoolClient | undefined>();
    done();
  });
  pool.on('error', (err, errored) => {
    expectTypeOf(err).toEqualTypeOf<Error>();
    expectTypeOf(errored).toEqualTypeOf<pg.PoolClient>();
  });
  pool.on('connect', (connected) => expectTypeOf(connected).toEqualTypeOf<pg.PoolClient>());
  pool.on('switch', (event) => expectTypeOf(event).toEqualTypeOf<SwitchEvent>());
  // @ts-expect-error an event neither pg.Pool nor hotload emits (pg's typing rejects it too)
  pool.on('nonsense', () => {});
  // @ts-expect-error a listener of the wrong shape
  pool.on('switch', (event: number) => event);
  expectTypeOf(pool.totalCount).toEqualTypeOf<number>();
  expectTypeOf(pool.end()).toEqualTypeOf<Promise<void>>();
  void [asPg, viaDefault, pgModule, builtModule];
}

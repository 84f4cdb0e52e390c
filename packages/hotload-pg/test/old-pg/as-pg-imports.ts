/**
 * An app written against pg and its @types/pg, with `'pg'` replaced by `'hotload-pg'` in
 * its imports and nothing else: named imports (as DefinitelyTyped's pg tests use them),
 * the default import and a namespace import, with pg's types reached through each.
 * types.test.ts compiles this file against the @types/pg hotload-pg is built with and
 * against the oldest supported one: every line must compile with both.
 */

import * as pgNamespace from 'hotload-pg';
import pg, {
  Client,
  type CustomTypesConfig,
  DatabaseError,
  Pool,
  type PoolClient,
  type QueryArrayConfig,
  type QueryResult,
  types,
} from 'hotload-pg';
import type * as realPg from 'pg';
import { expectTypeOf } from 'vitest';

interface Person {
  name: string;
}

export async function writtenForPg(): Promise<void> {
  types.setTypeParser(20, (value) => Number(value));
  expectTypeOf(types).toEqualTypeOf<typeof realPg.types>();

  const client = new Client({ host: 'localhost', port: 5432, application_name: 'app', keepAlive: true });
  expectTypeOf(client).toEqualTypeOf<realPg.Client>();
  client.on('notification', (message) => expectTypeOf(message).toEqualTypeOf<realPg.Notification>());

  const customTypes: CustomTypesConfig = { getTypeParser: () => () => 'parsed' };
  const arrayConfig: QueryArrayConfig = { text: 'SELECT $1::text', values: ['brianc'], rowMode: 'array' };

  const pool = new Pool({
    max: 20,
    idleTimeoutMillis: 30_000,
    allowExitOnIdle: true,
    maxUses: 100,
    types: customTypes,
    log: (...messages) => void messages,
  });
  pool.on('error', (err, errored) => {
    expectTypeOf(err).toEqualTypeOf<Error>();
    expectTypeOf(errored).toEqualTypeOf<PoolClient>();
  });
  pool.on('release', (err, released) => {
    expectTypeOf(err).toEqualTypeOf<Error>(); // as @types/pg types it (pg-pool passes undefined on a plain release)
    expectTypeOf(released).toEqualTypeOf<PoolClient>();
    if (err) void err.message;
  });
  pool.once('error', (err) => void err.message);
  pool.on('acquire', (acquired) => expectTypeOf(acquired).toEqualTypeOf<PoolClient>());

  const people = await pool.query<Person>('SELECT $1::text AS name', ['brianc']);
  expectTypeOf(people).toEqualTypeOf<QueryResult<Person>>();
  expectTypeOf(people).toEqualTypeOf<pg.QueryResult<Person>>();
  expectTypeOf(people).toEqualTypeOf<pgNamespace.QueryResult<Person>>();
  expectTypeOf(people).toEqualTypeOf<realPg.QueryResult<Person>>();
  expectTypeOf(await pool.query(arrayConfig)).toEqualTypeOf<realPg.QueryArrayResult>();
  expectTypeOf(
    await pool.query({ text: 'SELECT $1::text AS name' }, ['brianc']),
  ).toEqualTypeOf<realPg.QueryResult>();

  const pooled: pg.PoolClient = await pool.connect();
  try {
    await pooled.query('SELECT NOW()');
  } catch (err) {
    if (err instanceof DatabaseError) {
      const position: string | undefined = err.position;
      void position;
    }
  }
  pooled.release(true);
  pool.end(() => {});

  // The default export: pg's module object and pg's types on it.
  const viaDefault: realPg.Pool = new pg.Pool({ max: 1 });
  const defaultClient: pg.Client = new pg.Client();
  expectTypeOf<pg.PoolClient>().toEqualTypeOf<realPg.PoolClient>();
  expectTypeOf<pg.QueryResult>().toEqualTypeOf<realPg.QueryResult>();
  expectTypeOf<pg.QueryResultRow>().toEqualTypeOf<realPg.QueryResultRow>();
  expectTypeOf<pg.QueryConfig>().toEqualTypeOf<realPg.QueryConfig>();
  expectTypeOf<pg.PoolConfig>().toExtend<realPg.PoolConfig>();
  expectTypeOf<pg.Pool>().toExtend<realPg.Pool>();
  expectTypeOf(pg.defaults).toEqualTypeOf<typeof realPg.defaults>();
  expectTypeOf(pg.native).toEqualTypeOf<null>();
  const nativeAsPg: typeof realPg.native = pg.native;

  // A namespace import: the same names.
  expectTypeOf<pgNamespace.PoolClient>().toEqualTypeOf<realPg.PoolClient>();
  expectTypeOf(pgNamespace.Client).toEqualTypeOf<typeof realPg.Client>();
  void [viaDefault, defaultClient, nativeAsPg];
}

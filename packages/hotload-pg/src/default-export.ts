/**
 * `import pg from 'hotload-pg'`: the value and the types of pg's default export, so code
 * written as `import pg from 'pg'` compiles and runs unchanged with the import switched,
 * types included (`pg.PoolClient`, `pg.QueryResult<Row>`, `pg.Pool`, ... as `@types/pg`
 * declares them on pg's default export).
 */
import type pg from 'pg';
import { createPgModule, type PgModule } from './pg-module.js';
import type { PgRow, PgValues } from './pg-type-defaults.js';

/**
 * pg's module object with hotload-pg's `Pool` (see {@link createPgModule}), so
 * `import pg from 'pg'; new pg.Pool(...)` switches by changing the import alone. Its
 * members are pg's own (`pg.defaults`, `pg.types` are pg's objects); `native` is `null`
 * and, as in pg, not enumerable.
 */
const pgModule = createPgModule();

/**
 * The types `@types/pg` declares on pg's default export (a value merged with a namespace of
 * types only, as `@types/pg` does), so `pg.PoolClient`, `pg.QueryResult<Row>` work through
 * this default export too.
 */
declare namespace pgModule {
  // Pool and PoolConfig are named through the module's type, not imported by name: the
  // declaration bundler would rename an import of `Pool` to `Pool` here, a type alias of itself.
  /** hotload-pg's {@link Pool}. */
  export type Pool = InstanceType<PgModule['Pool']>;
  /** pg's pool options plus `hotload` (hotload-pg's {@link PoolConfig}). */
  export type PoolConfig = NonNullable<ConstructorParameters<PgModule['Pool']>[0]>;
  /** pg's `PoolClient`. */
  export type PoolClient = pg.PoolClient;
  /** pg's `Client`. */
  export type Client = pg.Client;
  /** pg's `ClientBase`. */
  export type ClientBase = pg.ClientBase;
  /** pg's `ClientConfig`. */
  export type ClientConfig = pg.ClientConfig;
  /** pg's `ConnectionConfig`. */
  export type ConnectionConfig = pg.ConnectionConfig;
  /** pg's `Connection`. */
  export type Connection = pg.Connection;
  /** pg's `Defaults`. */
  export type Defaults = pg.Defaults;
  /** pg's `DatabaseError`. */
  export type DatabaseError = pg.DatabaseError;
  /** pg's `Query` (as on pg's default export, where `@types/pg` declares it without type parameters). */
  export type Query = pg.Query;
  // Values typed as arrays, as @types/pg 8.11.0 (the oldest allowed) constrains them.
  /** pg's `QueryConfig`. */
  export type QueryConfig<I extends PgValues = PgValues> = pg.QueryConfig<I>;
  /** pg's `QueryArrayConfig`. */
  export type QueryArrayConfig<I extends PgValues = PgValues> = pg.QueryArrayConfig<I>;
  /** pg's `QueryResult`. */
  export type QueryResult<R extends QueryResultRow = PgRow> = pg.QueryResult<R>;
  /** pg's `QueryArrayResult`. */
  export type QueryArrayResult<R extends PgValues = PgValues> = pg.QueryArrayResult<R>;
  /** pg's `QueryResultBase`. */
  export type QueryResultBase = pg.QueryResultBase;
  /** pg's `QueryResultRow`. */
  export type QueryResultRow = pg.QueryResultRow;
  /** pg's `ResultBuilder`. */
  export type ResultBuilder<R extends QueryResultRow = PgRow> = pg.ResultBuilder<R>;
  /** pg's `FieldDef`. */
  export type FieldDef = pg.FieldDef;
  /** pg's `Notification`. */
  export type Notification = pg.Notification;
  /** pg's `Submittable`. */
  export type Submittable = pg.Submittable;
  /** pg's `CustomTypesConfig`. */
  export type CustomTypesConfig = pg.CustomTypesConfig;
  /** pg's `Events`. */
  export type Events = pg.Events;
  /** pg's `QueryParse`. */
  export type QueryParse = pg.QueryParse;
  /** pg's `BindConfig`. */
  export type BindConfig = pg.BindConfig;
  /** pg's `ExecuteConfig`. */
  export type ExecuteConfig = pg.ExecuteConfig;
  /** pg's `MessageConfig`. */
  export type MessageConfig = pg.MessageConfig;
}

export default pgModule;

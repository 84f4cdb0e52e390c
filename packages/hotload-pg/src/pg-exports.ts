/**
 * pg's own members under their own names, as pg's ESM entry exports them, so
 * `import { Pool, Client, types } from 'pg'` switches to hotload-pg by changing the import
 * alone (`Pool` is hotload-pg's). They are the application's pg's objects themselves, not
 * copies: `types.setTypeParser(...)` and `defaults.parseInt8 = true` change pg's, exactly
 * as through 'pg'.
 *
 * Read from pg's module object rather than re-exported by name (`export { Client } from
 * 'pg'`): pg before 8.15 has no ESM entry and Node cannot see its names from ESM, so a
 * named re-export would break the import of hotload-pg on those versions. `Result` and
 * `TypeOverrides` exist from pg 8.16 on: with an older pg they are `undefined` (typed so
 * with an older @types/pg), where pg itself has no ESM entry to import them from.
 */
import pg, { type Query as PgQuery } from 'pg';
import type { PgRow, PgValues } from './pg-type-defaults.js';

/** pg's `Client` class (the application's pg). */
export const Client: typeof pg.Client = pg.Client;
/** A pg client (pg's `Client`). */
export type Client = pg.Client;

/** pg's `Query` class: a submittable for `client.query(new Query(...))`. */
export const Query: typeof pg.Query = pg.Query;
/** A pg `Query` (defaults as in `@types/pg`). */
export type Query<R extends pg.QueryResultRow = PgRow, I extends PgValues = PgValues> = PgQuery<R, I>;

/** pg's `Connection` class (the wire protocol of one client). */
export const Connection: typeof pg.Connection = pg.Connection;
/** A pg `Connection`. */
export type Connection = pg.Connection;

/** pg's `DatabaseError` (pg-protocol's): errors the server reported, with `code`, `detail`, ... */
export const DatabaseError: typeof pg.DatabaseError = pg.DatabaseError;
/** An error the server reported (pg's `DatabaseError`). */
export type DatabaseError = pg.DatabaseError;

/** pg's type parsers (pg-types): `types.setTypeParser(oid, parse)` applies to every pool and client. */
export const types: typeof pg.types = pg.types;

/** pg's defaults (`pg.defaults`): the same object, so setting a field here sets pg's. */
export const defaults: typeof pg.defaults = pg.defaults;

/** The type of pg's member `K`, or `undefined` where the installed `@types/pg` has no such member. */
type OptionalPgMember<K extends string> = typeof pg extends { readonly [P in K]: infer V } ? V : undefined;
const pgMembers = pg as unknown as Record<string, unknown>;

/** pg's `Result` class (pg ≥ 8.16; `undefined` with an older pg). */
export const Result = pgMembers.Result as OptionalPgMember<'Result'>;

/** pg's `TypeOverrides` class (pg ≥ 8.16; `undefined` with an older pg). */
export const TypeOverrides = pgMembers.TypeOverrides as OptionalPgMember<'TypeOverrides'>;

/** pg's `escapeIdentifier`. */
export const escapeIdentifier: typeof pg.escapeIdentifier = pg.escapeIdentifier;

/** pg's `escapeLiteral`. */
export const escapeLiteral: typeof pg.escapeLiteral = pg.escapeLiteral;

// pg's types that @types/pg 8.11.0, the oldest allowed, already has (`QueryConfigValues` came later).
export type {
  BindConfig,
  ClientBase,
  ClientConfig,
  ConnectionConfig,
  CustomTypesConfig,
  Defaults,
  Events,
  ExecuteConfig,
  FieldDef,
  MessageConfig,
  Notification,
  PoolClient,
  QueryArrayConfig,
  QueryArrayResult,
  QueryConfig,
  QueryParse,
  QueryResult,
  QueryResultBase,
  QueryResultRow,
  ResultBuilder,
  Submittable,
} from 'pg';

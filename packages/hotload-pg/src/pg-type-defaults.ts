/**
 * The defaults `@types/pg` gives its generic types (`QueryResult<R = any>`,
 * `QueryConfig<I = any[]>`), read from pg's own types rather than written out, so the
 * aliases hotload-pg re-exports default exactly as pg's do.
 */
import type pg from 'pg';

/** pg's default row type of a result (`any`, as `@types/pg` declares it). */
export type PgRow = pg.QueryResult['rows'][number];
/** pg's default type of query values (`any[]`, as `@types/pg` declares it). */
export type PgValues = NonNullable<pg.QueryConfig['values']>;

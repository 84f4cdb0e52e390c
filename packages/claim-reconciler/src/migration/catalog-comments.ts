/**
 * Comments (`COMMENT ON`) on the objects the schema copy carries: schemas, tables, views,
 * sequences, indexes, columns, constraints, enum types and collations. Each is named the
 * way `COMMENT ON` takes it, from `pg_identify_object`, which prints the same identity on
 * every major.
 */
import { USER_SCHEMA_FILTER } from './catalog-filters.js';
import type { SqlClient } from './sql-client.js';

/** One comment. */
export interface CommentDefinition {
  /** What `COMMENT ON` takes, e.g. `COLUMN public.notes.body`, `CONSTRAINT c on public.t`. */
  readonly name: string;
  readonly text: string;
}

/** PostgreSQL's own comment on the `public` schema, present in every database. */
const DEFAULT_PUBLIC_COMMENT = 'standard public schema';

/** The comments on `client`'s own objects. */
export async function readComments(client: SqlClient): Promise<CommentDefinition[]> {
  const { rows } = await client.query<CommentDefinition>(
    `SELECT format('%s %s', upper(CASE WHEN o.type LIKE '% column' THEN 'column'
                                       WHEN o.type LIKE '% constraint' THEN 'constraint'
                                       ELSE o.type END), o.identity) AS name,
            d.description AS text
       FROM pg_description d
       CROSS JOIN LATERAL pg_identify_object(d.classoid, d.objoid, d.objsubid) o
       CROSS JOIN LATERAL (SELECT coalesce(o.schema, o.name) AS nspname) n
      WHERE d.classoid IN ('pg_class'::regclass, 'pg_namespace'::regclass, 'pg_type'::regclass,
                           'pg_constraint'::regclass, 'pg_collation'::regclass)
        AND ${USER_SCHEMA_FILTER}
        AND NOT EXISTS (SELECT 1 FROM pg_depend x WHERE x.classid = d.classoid AND x.objid = d.objoid AND x.deptype = 'e')
        AND NOT (o.type = 'schema' AND o.name = 'public' AND d.description = '${DEFAULT_PUBLIC_COMMENT}')
      ORDER BY 1`,
  );
  return rows;
}

/**
 * Reads the supported part of a database's catalog as data: schemas, extensions,
 * collations, enum types, sequences, tables with their columns and replica identity,
 * constraints, indexes, views, comments and privileges. Every definition
 * comes from the server's own deparse functions (`format_type`, `pg_get_expr`,
 * `pg_get_constraintdef`, `pg_get_indexdef`, `pg_get_viewdef`), read with an empty
 * `search_path` so each name is schema-qualified: the text is valid DDL on the target and
 * comparable between the two instances as is.
 */
import { type CollationDefinition, readCollations } from './catalog-collations.js';
import { type CommentDefinition, readComments } from './catalog-comments.js';
import { type ExtensionDefinition, readExtensions } from './catalog-extensions.js';
import { notExtensionMember, USER_SCHEMA_FILTER } from './catalog-filters.js';
import { type PrivilegeGrant, readPrivileges } from './catalog-privileges.js';
import type { SqlClient } from './sql-client.js';

/** An enum type and its labels in sort order. */
export interface EnumType {
  readonly name: string;
  readonly labels: readonly string[];
}

/** A sequence; `ownedBy` is `schema.table.column` for serial and identity sequences. */
export interface SequenceDefinition {
  readonly name: string;
  readonly type: string;
  readonly start: string;
  readonly increment: string;
  readonly min: string;
  readonly max: string;
  readonly cache: string;
  readonly cycle: boolean;
  /** `a`: serial (OWNED BY), `i`: identity column, null: standalone. */
  readonly dependency: 'a' | 'i' | null;
  readonly ownedBy: string | null;
}

/** One column. */
export interface ColumnDefinition {
  readonly name: string;
  readonly type: string;
  readonly notNull: boolean;
  readonly default: string | null;
  /** `a` ALWAYS, `d` BY DEFAULT, '' none. */
  readonly identity: '' | 'a' | 'd';
  /** The sequence behind an identity column (qualified name), else null. */
  readonly identitySequence: string | null;
  /** The column's collation (qualified) where it is not its type's default, else null. */
  readonly collation: string | null;
}

/**
 * Which old row values a table's updates and deletes write to the WAL, which is what logical
 * replication finds the row on the target by (`ALTER TABLE … REPLICA IDENTITY`).
 */
export type ReplicaIdentity = 'default' | 'full' | 'nothing' | 'index';

/** A table, its columns in order, and its replica identity. */
export interface TableDefinition {
  readonly name: string;
  readonly columns: readonly ColumnDefinition[];
  readonly replicaIdentity: ReplicaIdentity;
  /** The index named by `REPLICA IDENTITY USING INDEX` (quoted, unqualified), else null. */
  readonly replicaIdentityIndex: string | null;
}

/** A primary key, unique, check or foreign-key constraint. */
export interface ConstraintDefinition {
  readonly table: string;
  readonly name: string;
  readonly type: 'p' | 'u' | 'c' | 'f';
  readonly definition: string;
}

/** An index that no constraint owns. */
export interface IndexDefinition {
  readonly name: string;
  readonly definition: string;
}

/** A (plain) view. */
export interface ViewDefinition {
  readonly name: string;
  readonly definition: string;
}

/** The supported part of one database's catalog. */
export interface CatalogSnapshot {
  readonly schemas: readonly string[];
  readonly extensions: readonly ExtensionDefinition[];
  readonly collations: readonly CollationDefinition[];
  readonly enums: readonly EnumType[];
  readonly sequences: readonly SequenceDefinition[];
  readonly tables: readonly TableDefinition[];
  readonly constraints: readonly ConstraintDefinition[];
  readonly indexes: readonly IndexDefinition[];
  readonly views: readonly ViewDefinition[];
  readonly comments: readonly CommentDefinition[];
  readonly privileges: readonly PrivilegeGrant[];
}

/**
 * Reads `client`'s database catalog in one read-only transaction (one consistent view),
 * with an empty `search_path` for that transaction only.
 */
export async function readCatalog(client: SqlClient): Promise<CatalogSnapshot> {
  await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
  try {
    await client.query(`SELECT set_config('search_path', '', true)`);
    return await readCatalogInTransaction(client);
  } finally {
    await client.query('COMMIT').catch(() => {});
  }
}

async function readCatalogInTransaction(client: SqlClient): Promise<CatalogSnapshot> {
  const schemas = await client.query<{ name: string }>(
    `SELECT quote_ident(n.nspname) AS name FROM pg_namespace n
      WHERE ${USER_SCHEMA_FILTER} AND ${notExtensionMember('pg_namespace', 'n.oid')} ORDER BY 1`,
  );
  const enums = await client.query<EnumType>(
    `SELECT format('%I.%I', n.nspname, t.typname) AS name,
            array_agg(e.enumlabel::text ORDER BY e.enumsortorder) AS labels
       FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
       JOIN pg_enum e ON e.enumtypid = t.oid
      WHERE ${USER_SCHEMA_FILTER} AND ${notExtensionMember('pg_type', 't.oid')} GROUP BY 1 ORDER BY 1`,
  );
  const sequences = await client.query<SequenceDefinition>(
    `SELECT format('%I.%I', n.nspname, c.relname) AS name, format_type(s.seqtypid, NULL) AS type,
            s.seqstart::text AS start, s.seqincrement::text AS increment, s.seqmin::text AS min,
            s.seqmax::text AS max, s.seqcache::text AS cache, s.seqcycle AS cycle,
            d.deptype AS dependency,
            CASE WHEN d.objid IS NULL THEN NULL
                 ELSE format('%I.%I.%I', tn.nspname, tc.relname, a.attname) END AS "ownedBy"
       FROM pg_sequence s JOIN pg_class c ON c.oid = s.seqrelid
       JOIN pg_namespace n ON n.oid = c.relnamespace
       LEFT JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.objid = c.oid
                            AND d.refclassid = 'pg_class'::regclass AND d.deptype IN ('a', 'i')
       LEFT JOIN pg_class tc ON tc.oid = d.refobjid
       LEFT JOIN pg_namespace tn ON tn.oid = tc.relnamespace
       LEFT JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
      WHERE ${USER_SCHEMA_FILTER} AND ${notExtensionMember('pg_class', 'c.oid')} ORDER BY 1`,
  );
  const columns = await client.query<ColumnDefinition & { table: string }>(
    `SELECT format('%I.%I', n.nspname, c.relname) AS table, a.attname AS name,
            format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull AS "notNull",
            pg_get_expr(d.adbin, d.adrelid) AS default, a.attidentity::text AS identity,
            CASE WHEN a.attidentity <> '' THEN pg_get_serial_sequence(format('%I.%I', n.nspname, c.relname), a.attname)
            END AS "identitySequence",
            CASE WHEN a.attcollation <> 0 AND a.attcollation <> t.typcollation
                 THEN format('%I.%I', cn.nspname, co.collname) END AS collation
       FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
       JOIN pg_namespace n ON n.oid = c.relnamespace
       JOIN pg_type t ON t.oid = a.atttypid
       LEFT JOIN pg_collation co ON co.oid = a.attcollation
       LEFT JOIN pg_namespace cn ON cn.oid = co.collnamespace
       LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
      WHERE c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped AND ${USER_SCHEMA_FILTER}
        AND ${notExtensionMember('pg_class', 'c.oid')}
      ORDER BY 1, a.attnum`,
  );
  const tables = await client.query<TableIdentityRow>(
    `SELECT format('%I.%I', n.nspname, c.relname) AS name, c.relreplident AS identity,
            (SELECT quote_ident(ic.relname) FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
              WHERE i.indrelid = c.oid AND i.indisreplident) AS index
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE c.relkind = 'r' AND ${USER_SCHEMA_FILTER} AND ${notExtensionMember('pg_class', 'c.oid')}
      ORDER BY 1`,
  );
  const constraints = await client.query<ConstraintDefinition>(
    `SELECT format('%I.%I', n.nspname, c.relname) AS table, quote_ident(con.conname) AS name,
            con.contype::text AS type, pg_get_constraintdef(con.oid) AS definition
       FROM pg_constraint con JOIN pg_class c ON c.oid = con.conrelid
       JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE con.contype IN ('p', 'u', 'c', 'f') AND c.relkind = 'r' AND ${USER_SCHEMA_FILTER}
        AND ${notExtensionMember('pg_class', 'c.oid')}
      ORDER BY 1, 2`,
  );
  const indexes = await client.query<IndexDefinition>(
    `SELECT format('%I.%I', n.nspname, ic.relname) AS name, pg_get_indexdef(i.indexrelid) AS definition
       FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
       JOIN pg_class tc ON tc.oid = i.indrelid JOIN pg_namespace n ON n.oid = ic.relnamespace
      WHERE tc.relkind = 'r' AND ${USER_SCHEMA_FILTER} AND ${notExtensionMember('pg_class', 'tc.oid')}
        AND NOT EXISTS (SELECT 1 FROM pg_constraint con WHERE con.conindid = i.indexrelid
                           AND con.conrelid = i.indrelid AND con.contype IN ('p', 'u', 'x'))
      ORDER BY 1`,
  );
  // Creation order (oid) keeps a view after the views it reads from.
  const views = await client.query<ViewDefinition>(
    `SELECT format('%I.%I', n.nspname, c.relname) AS name, pg_get_viewdef(c.oid) AS definition
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE c.relkind = 'v' AND ${USER_SCHEMA_FILTER} AND ${notExtensionMember('pg_class', 'c.oid')}
      ORDER BY c.oid`,
  );
  return {
    schemas: schemas.rows.map((r) => r.name),
    extensions: await readExtensions(client),
    collations: await readCollations(client),
    enums: enums.rows,
    sequences: sequences.rows,
    tables: tableDefinitions(tables.rows, columns.rows),
    constraints: constraints.rows,
    indexes: indexes.rows,
    views: views.rows,
    comments: await readComments(client),
    privileges: await readPrivileges(client),
  };
}

/** A table's `pg_class.relreplident` and its replica identity index. */
interface TableIdentityRow {
  readonly name: string;
  readonly identity: 'd' | 'f' | 'n' | 'i';
  readonly index: string | null;
}

const REPLICA_IDENTITIES = { d: 'default', f: 'full', n: 'nothing', i: 'index' } as const;

function tableDefinitions(
  tables: readonly TableIdentityRow[],
  columnRows: ReadonlyArray<ColumnDefinition & { table: string }>,
): TableDefinition[] {
  const columns = new Map<string, ColumnDefinition[]>();
  for (const { table, ...column } of columnRows) {
    const list = columns.get(table) ?? [];
    list.push(column);
    columns.set(table, list);
  }
  return tables.map((t) => ({
    name: t.name,
    columns: columns.get(t.name) ?? [],
    replicaIdentity: REPLICA_IDENTITIES[t.identity],
    replicaIdentityIndex: t.identity === 'i' ? t.index : null,
  }));
}

/** Whether a database holds any table, view, sequence or enum of its own. */
export function isEmptyCatalog(snapshot: CatalogSnapshot): boolean {
  return (
    snapshot.tables.length === 0 &&
    snapshot.views.length === 0 &&
    snapshot.sequences.length === 0 &&
    snapshot.enums.length === 0
  );
}

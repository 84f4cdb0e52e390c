/**
 * The SQL conditions every catalog read shares: which schemas are the application's, and
 * which objects an extension made. An extension's members are created by `CREATE
 * EXTENSION` on the target, so the schema copy neither copies nor refuses them.
 */

/** Schemas that belong to PostgreSQL itself, never copied (`n` is the pg_namespace row). */
export const USER_SCHEMA_FILTER = `n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')
  AND n.nspname NOT LIKE 'pg\\_temp\\_%' AND n.nspname NOT LIKE 'pg\\_toast\\_temp\\_%'`;

/** True for an object (`oid` in `catalog`, e.g. `pg_class`) that no extension owns. */
export function notExtensionMember(catalog: string, oid: string): string {
  return `NOT EXISTS (SELECT 1 FROM pg_depend x WHERE x.classid = '${catalog}'::regclass
                         AND x.objid = ${oid} AND x.deptype = 'e')`;
}

/**
 * Privileges granted on the copied objects (tables, views, sequences, their columns, and
 * schemas) to roles other than each object's owner, PUBLIC included. The owner's own
 * privileges come with ownership; the rest are granted again on the target, where each
 * grantee must already exist (target-readiness.ts refuses the move otherwise). Who granted
 * is not kept: on the target the owner grants.
 */
import { notExtensionMember, USER_SCHEMA_FILTER } from './catalog-filters.js';
import type { SqlClient } from './sql-client.js';

/** One privilege of one grantee on one object (or column). */
export interface PrivilegeGrant {
  /** What `GRANT` takes, e.g. `SELECT (email) ON TABLE public.authors TO reporting`. */
  readonly name: string;
  /** The grantee role's name, unquoted; null for PUBLIC. */
  readonly grantee: string | null;
  /** Granted WITH GRANT OPTION. */
  readonly grantable: boolean;
}

const GRANTABLE_OBJECTS = `
  SELECT CASE c.relkind WHEN 'S' THEN 'SEQUENCE' ELSE 'TABLE' END AS kind,
         format('%I.%I', n.nspname, c.relname) AS object, NULL::text AS col, c.relacl AS acl, c.relowner AS owner
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
   WHERE c.relkind IN ('r', 'v', 'S') AND c.relacl IS NOT NULL AND ${USER_SCHEMA_FILTER}
     AND ${notExtensionMember('pg_class', 'c.oid')}
  UNION ALL
  SELECT 'TABLE', format('%I.%I', n.nspname, c.relname), quote_ident(a.attname), a.attacl, c.relowner
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
   WHERE c.relkind IN ('r', 'v') AND a.attnum > 0 AND NOT a.attisdropped AND a.attacl IS NOT NULL
     AND ${USER_SCHEMA_FILTER} AND ${notExtensionMember('pg_class', 'c.oid')}
  UNION ALL
  SELECT 'SCHEMA', quote_ident(n.nspname), NULL, n.nspacl, n.nspowner
    FROM pg_namespace n
   WHERE n.nspacl IS NOT NULL AND ${USER_SCHEMA_FILTER} AND ${notExtensionMember('pg_namespace', 'n.oid')}`;

/** The privileges granted on `client`'s own objects to roles other than their owners. */
export async function readPrivileges(client: SqlClient): Promise<PrivilegeGrant[]> {
  const { rows } = await client.query<PrivilegeGrant>(
    `SELECT format('%s%s ON %s %s TO %s', p.privilege_type, coalesce(' (' || o.col || ')', ''), o.kind, o.object,
                   CASE p.grantee WHEN 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(p.grantee)) END) AS name,
            CASE p.grantee WHEN 0 THEN NULL ELSE pg_get_userbyid(p.grantee)::text END AS grantee,
            p.is_grantable AS grantable
       FROM (${GRANTABLE_OBJECTS}) o CROSS JOIN LATERAL aclexplode(o.acl) p
      WHERE p.grantee <> o.owner
      ORDER BY 1`,
  );
  return rows;
}

/**
 * Objects a migration cannot carry. The schema copy handles a fixed set (see
 * catalog-snapshot.ts); anything else in the claim's database — or anything logical
 * replication cannot replay faithfully — makes the migration refuse before a single object
 * is created on the target, naming each object and why. Objects an extension made are
 * not looked at: `CREATE EXTENSION` makes them on the target (target-readiness.ts checks
 * that it can). Tables without a primary key are not refused: replica-identity.ts gives
 * them one.
 */
import { notExtensionMember, USER_SCHEMA_FILTER } from './catalog-filters.js';
import type { SqlClient } from './sql-client.js';

/** One object the migration refuses to move, with the reason. */
export interface UnsupportedObject {
  readonly object: string;
  readonly reason: string;
}

/**
 * Each query returns `object` and `reason` rows. They read the catalog directly (rather
 * than diffing against the supported set) so that an object kind nobody thought of still
 * shows up under its catalog.
 */
const CHECKS: readonly string[] = [
  `SELECT format('%s %I.%I', CASE c.relkind WHEN 'm' THEN 'materialized view' WHEN 'p' THEN 'partitioned table'
            WHEN 'f' THEN 'foreign table' WHEN 'c' THEN 'composite type' END, n.nspname, c.relname) AS object,
          'this kind of relation is not copied' AS reason
     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relkind IN ('m', 'p', 'f', 'c') AND ${USER_SCHEMA_FILTER} AND ${notExtensionMember('pg_class', 'c.oid')}`,
  `SELECT format('table %I.%I', n.nspname, c.relname) AS object,
          CASE WHEN c.relispartition THEN 'partitions are not copied'
               WHEN c.relpersistence = 'u' THEN 'unlogged tables are not written to the WAL, so logical replication cannot carry their rows'
               ELSE 'row-level security policies are not copied' END AS reason
     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relkind = 'r' AND ${USER_SCHEMA_FILTER} AND ${notExtensionMember('pg_class', 'c.oid')}
      AND (c.relispartition OR c.relpersistence = 'u' OR c.relrowsecurity)`,
  `SELECT format('table %I.%I', n.nspname, c.relname) AS object, 'table inheritance is not copied' AS reason
     FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_namespace n ON n.oid = c.relnamespace`,
  `SELECT format('column %I.%I.%I', n.nspname, c.relname, a.attname) AS object,
          'generated columns are not copied' AS reason
     FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE a.attgenerated <> '' AND a.attnum > 0 AND NOT a.attisdropped AND ${USER_SCHEMA_FILTER}`,
  `SELECT format('constraint %I on %I.%I', con.conname, n.nspname, c.relname) AS object,
          CASE con.contype WHEN 'x' THEN 'exclusion constraints are not copied'
               ELSE 'constraint triggers are not copied' END AS reason
     FROM pg_constraint con JOIN pg_class c ON c.oid = con.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE con.contype IN ('x', 't') AND ${USER_SCHEMA_FILTER}`,
  `SELECT format('view %I.%I', n.nspname, c.relname) AS object,
          'view options (security_barrier, check_option, …) are not copied' AS reason
     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relkind = 'v' AND c.reloptions IS NOT NULL AND ${USER_SCHEMA_FILTER}`,
  `SELECT format('trigger %I on %s', t.tgname, t.tgrelid::regclass) AS object, 'triggers are not copied' AS reason
     FROM pg_trigger t WHERE NOT t.tgisinternal`,
  `SELECT format('rule %I on %s', r.rulename, r.ev_class::regclass) AS object, 'rules are not copied' AS reason
     FROM pg_rewrite r JOIN pg_class c ON c.oid = r.ev_class JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE r.rulename <> '_RETURN' AND ${USER_SCHEMA_FILTER}`,
  `SELECT format('%s %I.%I', CASE p.prokind WHEN 'p' THEN 'procedure' WHEN 'a' THEN 'aggregate' ELSE 'function' END,
            n.nspname, p.proname) AS object, 'functions and procedures are not copied' AS reason
     FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
    WHERE ${USER_SCHEMA_FILTER} AND ${notExtensionMember('pg_proc', 'p.oid')}`,
  `SELECT format('type %I.%I', n.nspname, t.typname) AS object,
          CASE t.typtype WHEN 'd' THEN 'domains are not copied' WHEN 'r' THEN 'range types are not copied'
               WHEN 'm' THEN 'multirange types are not copied' ELSE 'base types are not copied' END AS reason
     FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
    WHERE t.typtype IN ('b', 'd', 'r', 'm') AND t.typelem = 0 AND ${USER_SCHEMA_FILTER}
      AND ${notExtensionMember('pg_type', 't.oid')}
      AND NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.reltype = t.oid)`,
  `SELECT format('extension %I', e.extname) AS object,
          'its configuration tables hold rows of their own, which are not copied' AS reason
     FROM pg_extension e WHERE e.extconfig IS NOT NULL`,
  `SELECT format('default privileges of role %I%s', pg_get_userbyid(d.defaclrole),
            coalesce(' in schema ' || quote_ident(n.nspname), '')) AS object,
          'default privileges (ALTER DEFAULT PRIVILEGES) are not copied' AS reason
     FROM pg_default_acl d LEFT JOIN pg_namespace n ON n.oid = d.defaclnamespace`,
  `SELECT format('event trigger %I', e.evtname) AS object, 'event triggers are not copied' AS reason
     FROM pg_event_trigger e`,
  `SELECT format('%s large objects', count(*)) AS object,
          'large objects live in pg_largeobject, which no publication can carry' AS reason
     FROM pg_largeobject_metadata HAVING count(*) > 0`,
  ...[
    ['operator', 'pg_operator', 'oprname', 'oprnamespace'],
    ['operator class', 'pg_opclass', 'opcname', 'opcnamespace'],
    ['operator family', 'pg_opfamily', 'opfname', 'opfnamespace'],
    ['conversion', 'pg_conversion', 'conname', 'connamespace'],
    ['text search configuration', 'pg_ts_config', 'cfgname', 'cfgnamespace'],
    ['text search dictionary', 'pg_ts_dict', 'dictname', 'dictnamespace'],
    ['statistics object', 'pg_statistic_ext', 'stxname', 'stxnamespace'],
  ].map(
    ([kind, catalog, name, namespace]) =>
      `SELECT format('${kind} %I.%I', n.nspname, o.${name}) AS object, '${kind === 'statistics object' ? 'statistics objects' : `${kind}s`} are not copied' AS reason
         FROM ${catalog} o JOIN pg_namespace n ON n.oid = o.${namespace}
        WHERE ${USER_SCHEMA_FILTER} AND ${notExtensionMember(catalog!, 'o.oid')}`,
  ),
];

/** Every object in `client`'s database that the migration cannot carry; empty when none. */
export async function findUnsupportedObjects(client: SqlClient): Promise<UnsupportedObject[]> {
  const found: UnsupportedObject[] = [];
  for (const check of CHECKS) {
    const { rows } = await client.query<UnsupportedObject>(check);
    found.push(...rows);
  }
  return found.sort((a, b) => a.object.localeCompare(b.object));
}

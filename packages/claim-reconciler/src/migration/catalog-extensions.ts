/**
 * Extensions of the claim's database (PL/pgSQL, in every database, aside). The target gets
 * each with `CREATE EXTENSION` in the same schema before any table, so columns of an
 * extension's types (citext, hstore, …) can be created; the extension's own objects come
 * with it and are left out of every other catalog read (catalog-filters.ts).
 */
import type { SqlClient } from './sql-client.js';

/** An installed extension. */
export interface ExtensionDefinition {
  /** The extension's name as `CREATE EXTENSION` takes it, unquoted. */
  readonly name: string;
  /** The schema it was installed in, quoted. */
  readonly schema: string;
  /** Its version on this server; another major may ship another (compared by name and schema only). */
  readonly version: string;
}

/** Installed extensions in creation order, so one that requires another comes after it. */
export async function readExtensions(client: SqlClient): Promise<ExtensionDefinition[]> {
  const { rows } = await client.query<ExtensionDefinition>(
    `SELECT e.extname AS name, quote_ident(n.nspname) AS schema, e.extversion AS version
       FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
      WHERE e.extname <> 'plpgsql' ORDER BY e.oid`,
  );
  return rows;
}

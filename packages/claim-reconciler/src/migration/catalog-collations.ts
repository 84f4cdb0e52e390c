/**
 * Collations created in the application's schemas (`CREATE COLLATION`). The catalog
 * columns that hold a collation's locale moved between majors (15–16 `colliculocale`,
 * 17+ `colllocale`, `collicurules` from 16), so the row is read as JSON and normalized
 * here, which also makes two majors' readings of one collation compare equal.
 */
import { notExtensionMember, USER_SCHEMA_FILTER } from './catalog-filters.js';
import type { SqlClient } from './sql-client.js';

/** A user-defined collation. */
export interface CollationDefinition {
  /** Qualified and quoted, e.g. `public.nocase`. */
  readonly name: string;
  readonly provider: 'libc' | 'icu' | 'builtin';
  /** The ICU or builtin locale; null for libc. */
  readonly locale: string | null;
  /** The libc LC_COLLATE and LC_CTYPE; null for the other providers. */
  readonly lcCollate: string | null;
  readonly lcCtype: string | null;
  readonly deterministic: boolean;
  /** ICU tailoring rules (16+), else null. */
  readonly rules: string | null;
}

interface CollationRow {
  readonly name: string;
  readonly fields: Readonly<Record<string, string | boolean | null | undefined>>;
}

const PROVIDERS = { c: 'libc', i: 'icu', b: 'builtin' } as const;

/** The user-defined collations of `client`'s database. */
export async function readCollations(client: SqlClient): Promise<CollationDefinition[]> {
  const { rows } = await client.query<CollationRow>(
    `SELECT format('%I.%I', n.nspname, co.collname) AS name, to_jsonb(co) AS fields
       FROM pg_collation co JOIN pg_namespace n ON n.oid = co.collnamespace
      WHERE ${USER_SCHEMA_FILTER} AND ${notExtensionMember('pg_collation', 'co.oid')}
      ORDER BY 1`,
  );
  return rows.map(({ name, fields }) => normalize(name, fields));
}

function normalize(name: string, fields: CollationRow['fields']): CollationDefinition {
  const provider = PROVIDERS[fields.collprovider as keyof typeof PROVIDERS] ?? 'libc';
  const text = (value: unknown) => (typeof value === 'string' ? value : null);
  const libc = provider === 'libc';
  return {
    name,
    provider,
    locale: libc ? null : text(fields.colllocale ?? fields.colliculocale),
    lcCollate: libc ? text(fields.collcollate) : null,
    lcCtype: libc ? text(fields.collctype) : null,
    deterministic: fields.collisdeterministic !== false,
    rules: text(fields.collicurules),
  };
}

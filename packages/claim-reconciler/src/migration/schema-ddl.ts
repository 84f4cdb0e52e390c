/**
 * The DDL that recreates a {@link CatalogSnapshot} on an empty database, in dependency
 * order: schemas, extensions, collations, enum types, standalone and serial sequences,
 * tables (identity columns and collations inline), sequence ownership, primary key /
 * unique / check constraints, indexes, replica identities, foreign keys (after every
 * table exists), views, comments, grants. Names and expressions come deparsed and
 * schema-qualified from the source; only the statement frames are written here.
 */
import { quoteIdentifier, quoteLiteral } from '../core/sql-identifiers.js';
import type { CollationDefinition } from './catalog-collations.js';
import type {
  CatalogSnapshot,
  ColumnDefinition,
  SequenceDefinition,
  TableDefinition,
} from './catalog-snapshot.js';

/** The statements that build a snapshot, grouped by who runs them. */
export interface SchemaStatements {
  /** As the objects' owner: the schemas, which extensions may be created in. */
  readonly schemas: readonly string[];
  /** As the master user: an extension that is not trusted needs a superuser to be created. */
  readonly extensions: readonly string[];
  /** As the objects' owner: everything else. */
  readonly objects: readonly string[];
}

/**
 * Statements, in order, that build `snapshot` on an empty database. `extensionVersions`
 * holds, by extension name, the source's version where the target offers it too; any other
 * extension gets the target's default version.
 */
export function schemaStatements(
  snapshot: CatalogSnapshot,
  extensionVersions: ReadonlyMap<string, string>,
): SchemaStatements {
  return {
    schemas: snapshot.schemas.filter((s) => s !== 'public').map((s) => `CREATE SCHEMA IF NOT EXISTS ${s}`),
    extensions: snapshot.extensions.map((e) => {
      const version = extensionVersions.get(e.name);
      return `CREATE EXTENSION IF NOT EXISTS ${quoteIdentifier(e.name)} WITH SCHEMA ${e.schema}${version ? ` VERSION ${quoteLiteral(version)}` : ''}`;
    }),
    objects: objectStatements(snapshot),
  };
}

function objectStatements(snapshot: CatalogSnapshot): string[] {
  const identity = new Map(snapshot.sequences.filter((s) => s.dependency === 'i').map((s) => [s.name, s]));
  return [
    ...snapshot.collations.map((c) => `CREATE COLLATION ${c.name} (${collationOptions(c)})`),
    ...snapshot.enums.map(
      (e) => `CREATE TYPE ${e.name} AS ENUM (${e.labels.map((label) => quoteLiteral(label)).join(', ')})`,
    ),
    ...snapshot.sequences
      .filter((s) => s.dependency !== 'i')
      .map((s) => `CREATE SEQUENCE ${s.name} ${sequenceOptions(s)}`),
    ...snapshot.tables.map(
      (t) =>
        `CREATE TABLE ${t.name} (${t.columns.map((c) => columnDefinition(c, identity.get(c.identitySequence ?? ''))).join(', ')})`,
    ),
    ...snapshot.sequences
      .filter((s) => s.dependency === 'a' && s.ownedBy)
      .map((s) => `ALTER SEQUENCE ${s.name} OWNED BY ${s.ownedBy}`),
    ...snapshot.constraints
      .filter((c) => c.type !== 'f')
      .map((c) => `ALTER TABLE ${c.table} ADD CONSTRAINT ${c.name} ${c.definition}`),
    ...snapshot.indexes.map((i) => i.definition),
    ...snapshot.tables.flatMap((t) => replicaIdentityStatement(t)),
    ...snapshot.constraints
      .filter((c) => c.type === 'f')
      .map((c) => `ALTER TABLE ${c.table} ADD CONSTRAINT ${c.name} ${c.definition}`),
    ...snapshot.views.map((v) => `CREATE VIEW ${v.name} AS ${v.definition}`),
    ...snapshot.comments.map((c) => `COMMENT ON ${c.name} IS ${quoteLiteral(c.text)}`),
    ...snapshot.privileges.map((p) => `GRANT ${p.name}${p.grantable ? ' WITH GRANT OPTION' : ''}`),
  ];
}

/** The table's replica identity where it is not the default (none for most tables). */
function replicaIdentityStatement(table: TableDefinition): string[] {
  switch (table.replicaIdentity) {
    case 'default':
      return [];
    case 'index':
      return [`ALTER TABLE ${table.name} REPLICA IDENTITY USING INDEX ${table.replicaIdentityIndex}`];
    case 'full':
      return [`ALTER TABLE ${table.name} REPLICA IDENTITY FULL`];
    case 'nothing':
      return [`ALTER TABLE ${table.name} REPLICA IDENTITY NOTHING`];
  }
}

function collationOptions(c: CollationDefinition): string {
  const options = [`provider = ${c.provider}`];
  if (c.locale !== null) options.push(`locale = ${quoteLiteral(c.locale)}`);
  if (c.lcCollate !== null) options.push(`lc_collate = ${quoteLiteral(c.lcCollate)}`);
  if (c.lcCtype !== null) options.push(`lc_ctype = ${quoteLiteral(c.lcCtype)}`);
  if (c.rules !== null) options.push(`rules = ${quoteLiteral(c.rules)}`);
  options.push(`deterministic = ${c.deterministic}`);
  return options.join(', ');
}

function columnDefinition(column: ColumnDefinition, sequence: SequenceDefinition | undefined): string {
  const parts = [quoteIdentifier(column.name), column.type];
  if (column.collation !== null) parts.push(`COLLATE ${column.collation}`);
  if (column.identity !== '' && sequence) {
    const kind = column.identity === 'a' ? 'ALWAYS' : 'BY DEFAULT';
    parts.push(`GENERATED ${kind} AS IDENTITY (SEQUENCE NAME ${sequence.name} ${sequenceOptions(sequence)})`);
  } else if (column.default !== null) {
    parts.push(`DEFAULT ${column.default}`);
  }
  if (column.notNull) parts.push('NOT NULL');
  return parts.join(' ');
}

function sequenceOptions(s: SequenceDefinition): string {
  const options = [
    `INCREMENT BY ${s.increment}`,
    `MINVALUE ${s.min}`,
    `MAXVALUE ${s.max}`,
    `START WITH ${s.start}`,
    `CACHE ${s.cache}`,
    s.cycle ? 'CYCLE' : 'NO CYCLE',
  ];
  // An identity's type follows its column; naming it again would be rejected.
  return s.dependency === 'i' ? options.join(' ') : `AS ${s.type} ${options.join(' ')}`;
}

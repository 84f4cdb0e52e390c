/**
 * The DDL that recreates a {@link CatalogSnapshot} on an empty database, in dependency
 * order: schemas, enum types, standalone and serial sequences, tables (identity columns
 * inline), sequence ownership, primary key / unique / check constraints, indexes, foreign
 * keys (after every table exists), views. Names and expressions come deparsed and
 * schema-qualified from the source; only the statement frames are written here.
 */
import { quoteIdentifier, quoteLiteral } from '../core/sql-identifiers.js';
import type { CatalogSnapshot, ColumnDefinition, SequenceDefinition } from './catalog-snapshot.js';

/** Statements, in order, that build `snapshot` on an empty database. */
export function schemaStatements(snapshot: CatalogSnapshot): string[] {
  const identity = new Map(snapshot.sequences.filter((s) => s.dependency === 'i').map((s) => [s.name, s]));
  return [
    ...snapshot.schemas.filter((s) => s !== 'public').map((s) => `CREATE SCHEMA IF NOT EXISTS ${s}`),
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
    ...snapshot.constraints
      .filter((c) => c.type === 'f')
      .map((c) => `ALTER TABLE ${c.table} ADD CONSTRAINT ${c.name} ${c.definition}`),
    ...snapshot.views.map((v) => `CREATE VIEW ${v.name} AS ${v.definition}`),
  ];
}

function columnDefinition(column: ColumnDefinition, sequence: SequenceDefinition | undefined): string {
  const parts = [quoteIdentifier(column.name), column.type];
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

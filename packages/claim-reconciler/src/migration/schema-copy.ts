/**
 * Copies the claim database's schema from the source to the target over the master
 * connections (no pg_dump): refuse unsupported objects, and what the target lacks, first;
 * then give the source's tables without a primary key a replica identity
 * (replica-identity.ts); then create everything in one transaction as the claim's base
 * role (so objects end up owned as on the source and either all exist or none do;
 * extensions as the master user), then read both catalogs back and require them to match.
 */
import { quoteIdentifier } from '../core/sql-identifiers.js';
import { diffCatalogs } from './catalog-diff.js';
import { type CatalogSnapshot, isEmptyCatalog, readCatalog } from './catalog-snapshot.js';
import { MigrationRefusedError } from './migration-errors.js';
import { ensureReplicaIdentities, type ReplicaIdentityChoice } from './replica-identity.js';
import { type SchemaStatements, schemaStatements } from './schema-ddl.js';
import type { SqlClient } from './sql-client.js';
import { checkTargetReadiness } from './target-readiness.js';
import { findUnsupportedObjects, type UnsupportedObject } from './unsupported-objects.js';
import { viewsAsDeparsedBy } from './view-deparse.js';

/** What {@link copySchema} did. */
export interface SchemaCopyResult {
  /** False when the target already matched (a resumed migration). */
  readonly created: boolean;
  /** Qualified names of the tables, for the publication. */
  readonly tables: readonly string[];
  /** The tables without a primary key and the replica identity each replicates by. */
  readonly replicaIdentities: readonly ReplicaIdentityChoice[];
}

/**
 * Refuses if the source holds unsupported objects, then makes the target's schema equal to
 * the source's. `owner` is the role that owns the copied objects; `step` is announced
 * before the (only) write.
 */
export async function copySchema(
  source: SqlClient,
  target: SqlClient,
  owner: string,
  step: (action: string) => Promise<void>,
): Promise<SchemaCopyResult> {
  const unsupported = await findUnsupportedObjects(source);
  const { missing, extensionVersions } = await checkTargetReadiness(await readCatalog(source), target);
  refuse([...unsupported, ...missing]);
  const replicaIdentities = await ensureReplicaIdentities(source, step);
  const wanted = withoutGrantsTo(await readCatalog(source), owner);
  const tables = wanted.tables.map((t) => t.name);
  const existing = await readCatalog(target);
  const copied = { created: false, tables, replicaIdentities };
  if (isEmptyCatalog(wanted) && isEmptyCatalog(existing)) return copied;
  if (!isEmptyCatalog(existing)) {
    const differences = await catalogDifferences(wanted, existing, target);
    if (differences.length === 0) return copied;
    throw new MigrationRefusedError(
      `the target database already holds objects that differ from the source: ${summarize(differences)}`,
    );
  }
  await step('copy-schema');
  // An empty database still has what every database has (the public schema's grants): only the rest is added.
  await createSchema(target, owner, schemaStatements(withoutPresent(wanted, existing), extensionVersions));
  await verifySchema(source, target, owner);
  return { ...copied, created: true };
}

/** Runs `statements` in one transaction, as `owner` except for the extensions. */
async function createSchema(target: SqlClient, owner: string, statements: SchemaStatements): Promise<void> {
  const asOwner = `SET LOCAL ROLE ${quoteIdentifier(owner)}`;
  await target.query('BEGIN');
  try {
    await target.query(`SET LOCAL search_path = ''`);
    await target.query(asOwner);
    for (const statement of statements.schemas) await target.query(statement);
    await target.query('RESET ROLE');
    for (const statement of statements.extensions) await target.query(statement);
    await target.query(asOwner);
    for (const statement of statements.objects) await target.query(statement);
    await target.query('COMMIT');
  } catch (error) {
    await target.query('ROLLBACK').catch(() => {});
    throw error;
  }
}

/** `wanted` without the comments and grants `existing` already has. */
function withoutPresent(wanted: CatalogSnapshot, existing: CatalogSnapshot): CatalogSnapshot {
  const comments = new Set(existing.comments.map((c) => JSON.stringify(c)));
  const grants = new Set(existing.privileges.map((p) => JSON.stringify(p)));
  return {
    ...wanted,
    comments: wanted.comments.filter((c) => !comments.has(JSON.stringify(c))),
    privileges: wanted.privileges.filter((p) => !grants.has(JSON.stringify(p))),
  };
}

/** Throws a {@link MigrationRefusedError} naming every object that cannot move, and why; nothing when none. */
function refuse(unsupported: readonly UnsupportedObject[]): void {
  if (unsupported.length > 0) {
    throw new MigrationRefusedError(
      `cannot migrate: ${unsupported.map((u) => `${u.object} (${u.reason})`).join('; ')}`,
    );
  }
}

/**
 * `snapshot` without the grants to `owner`: on the target `owner` owns the copied objects,
 * which gives it every privilege (a source where it was only granted them, e.g. an existing
 * database the claim used in place, would otherwise never match).
 */
function withoutGrantsTo(snapshot: CatalogSnapshot, owner: string): CatalogSnapshot {
  return { ...snapshot, privileges: snapshot.privileges.filter((p) => p.grantee !== owner) };
}

/** Throws unless the two catalogs match for the supported set (`owner` owns the target's objects). */
export async function verifySchema(source: SqlClient, target: SqlClient, owner: string): Promise<void> {
  const wanted = withoutGrantsTo(await readCatalog(source), owner);
  const differences = await catalogDifferences(wanted, await readCatalog(target), target);
  if (differences.length > 0) {
    throw new MigrationRefusedError(`the target schema does not match the source: ${summarize(differences)}`);
  }
}

/**
 * {@link diffCatalogs}, with the source's views deparsed again by the target where their
 * text differs (another major prints the same view differently: view-deparse.ts).
 */
async function catalogDifferences(
  wanted: CatalogSnapshot,
  existing: CatalogSnapshot,
  target: SqlClient,
): Promise<string[]> {
  const differences = diffCatalogs(wanted, existing);
  if (!differences.some((difference) => difference.startsWith('view '))) return differences;
  // A view that cannot be created on the target (an object missing there) keeps its difference.
  const views = await viewsAsDeparsedBy(target, wanted.views).catch(() => undefined);
  return views ? diffCatalogs({ ...wanted, views }, existing) : differences;
}

function summarize(differences: readonly string[]): string {
  const shown = differences.slice(0, 5).join('; ');
  return differences.length > 5 ? `${shown}; and ${differences.length - 5} more` : shown;
}

/**
 * `spec.sourceDataFrom`: where a new claim's database takes its first data from, in the
 * database controller's shape (`type: database` with a `database:` block), so its
 * manifests parse unchanged. Three ways to name the source database:
 *
 * - `database.claimRef`: another claim's database (this reconciler's extension; the
 *   referenced claim's master login on its instance reads it);
 * - `database.dsnFile`: a file holding a DSN or URI with a login allowed to publish there
 *   (folder mode; a relative path is read from the claim file's folder);
 * - `database.secretRef`: a Secret holding that DSN (the controller; `uri_dsn.txt`, else
 *   `dsn.txt`, as the claims' own secrets spell it).
 *
 * The database controller's inline `database.dsn` is refused: a DSN in a manifest carries a
 * password in plain text. `type: s3` (restore from a backup) is refused too. A reference to
 * another namespace is refused: whoever may write claims in one namespace must not get a
 * copy of another namespace's data.
 */
import { z } from 'zod';

/** A namespaced object reference (`namespace` defaults to the claim's own). */
const OBJECT_REF_SCHEMA = z.strictObject({
  name: z.string().min(1),
  namespace: z.string().optional(),
});

/** `spec.sourceDataFrom` as written in a claim. */
export const SOURCE_DATA_FROM_SCHEMA = z.strictObject({
  /** `database` (an existing database) or `s3` (a backup: not supported). */
  type: z.enum(['database', 's3']),
  database: z
    .strictObject({
      /** The database controller's inline DSN: refused (it would hold a password). */
      dsn: z.string().optional(),
      /** A Secret holding the source's DSN (`uri_dsn.txt` or `dsn.txt`). */
      secretRef: OBJECT_REF_SCHEMA.optional(),
      /** A file holding the source's DSN (folder mode). */
      dsnFile: z.string().optional(),
      /** Another claim whose database is the source. */
      claimRef: OBJECT_REF_SCHEMA.optional(),
    })
    .optional(),
  /** Restoring from a backup: refused. */
  s3: z.unknown().optional(),
});

/** Where a new claim's database is seeded from, resolved against the claim (paths absolute). */
export type SeedSource =
  /** Another claim's database, `namespace/name`. */
  | { readonly kind: 'claim'; readonly claim: string }
  /** A DSN file (absolute path). */
  | { readonly kind: 'dsn-file'; readonly file: string }
  /** A Secret holding a DSN, `namespace/name`. */
  | { readonly kind: 'secret'; readonly secret: string };

/** How a seed source is named in messages, statuses and logs (never a secret). */
export function describeSeedSource(source: SeedSource): string {
  switch (source.kind) {
    case 'claim':
      return `claim ${source.claim}`;
    case 'dsn-file':
      return `DSN file ${source.file}`;
    case 'secret':
      return `Secret ${source.secret}`;
  }
}

/**
 * The seed source `sourceDataFrom` names, or the problem with it (a message for the field
 * `spec.sourceDataFrom`). `resolvePath` makes a `dsnFile` absolute.
 */
export function parseSeedSource(
  value: z.infer<typeof SOURCE_DATA_FROM_SCHEMA>,
  namespace: string,
  resolvePath: (file: string) => string,
): SeedSource | { readonly problem: string } {
  if (value.type === 's3' || value.s3 !== undefined)
    return { problem: 'type s3 (restoring from a backup) is not supported; use type database' };
  const database = value.database ?? {};
  if (database.dsn !== undefined)
    return {
      problem:
        'database.dsn is not supported: a DSN in the claim would hold a password in plain text; use database.dsnFile (folder mode) or database.secretRef',
    };
  const named = [database.claimRef, database.dsnFile, database.secretRef].filter((v) => v !== undefined);
  if (named.length !== 1)
    return {
      problem: 'type database needs exactly one of database.claimRef, database.dsnFile, database.secretRef',
    };
  const ref = database.claimRef ?? database.secretRef;
  if (ref?.namespace !== undefined && ref.namespace !== namespace)
    return {
      problem: `the source must be in the claim's own namespace ${namespace}: a claim must not copy another namespace's data`,
    };
  if (database.claimRef)
    return { kind: 'claim', claim: `${database.claimRef.namespace ?? namespace}/${database.claimRef.name}` };
  if (database.secretRef)
    return {
      kind: 'secret',
      secret: `${database.secretRef.namespace ?? namespace}/${database.secretRef.name}`,
    };
  if (database.dsnFile === '') return { problem: 'database.dsnFile must not be empty' };
  return { kind: 'dsn-file', file: resolvePath(database.dsnFile!) };
}

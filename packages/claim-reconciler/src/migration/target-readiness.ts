/**
 * What the target instance must already offer for the source's schema to be created
 * there, checked before anything moves: every extension installed in the source database
 * must be available on the target (`pg_available_extensions`), and every role the source
 * grants privileges to must exist there (roles are instance-wide; the move does not
 * create them, since their passwords and memberships are not the claim's to copy).
 */
import type { CatalogSnapshot } from './catalog-snapshot.js';
import type { SqlClient } from './sql-client.js';
import type { UnsupportedObject } from './unsupported-objects.js';

/** What {@link checkTargetReadiness} found. */
export interface TargetReadiness {
  /** Each extension and grantee the target lacks, with the reason: the move is refused when any. */
  readonly missing: readonly UnsupportedObject[];
  /** By extension name, the source's version where the target offers that same version (see schema-ddl.ts). */
  readonly extensionVersions: ReadonlyMap<string, string>;
}

/** Checks `target` against the source's catalog, `wanted`. */
export async function checkTargetReadiness(
  wanted: CatalogSnapshot,
  target: SqlClient,
): Promise<TargetReadiness> {
  const extensionNames = wanted.extensions.map((e) => e.name);
  const available = await target.query<{ name: string; version: string }>(
    'SELECT name, version FROM pg_available_extension_versions WHERE name = ANY ($1::text[])',
    [extensionNames],
  );
  const grantees = [...new Set(wanted.privileges.flatMap((p) => (p.grantee === null ? [] : [p.grantee])))];
  const roles = await target.query<{ name: string }>(
    'SELECT rolname::text AS name FROM pg_roles WHERE rolname = ANY ($1::text[])',
    [grantees],
  );
  const offered = new Set(available.rows.map((r) => r.name));
  const existing = new Set(roles.rows.map((r) => r.name));
  const missing = [
    ...extensionNames
      .filter((name) => !offered.has(name))
      .map((name) => ({
        object: `extension ${name}`,
        reason: 'not available on the target instance: pg_available_extensions does not list it',
      })),
    ...grantees
      .filter((role) => !existing.has(role))
      .map((role) => ({
        object: `privileges granted to role ${role}`,
        reason: `${grantedTo(wanted, role)}: the role does not exist on the target instance; create it there, or revoke them on the source`,
      })),
  ];
  const versions = new Set(available.rows.map((r) => `${r.name}\u0000${r.version}`));
  const extensionVersions = new Map(
    wanted.extensions
      .filter((e) => versions.has(`${e.name}\u0000${e.version}`))
      .map((e) => [e.name, e.version]),
  );
  return { missing, extensionVersions };
}

function grantedTo(wanted: CatalogSnapshot, role: string): string {
  const names = wanted.privileges.filter((p) => p.grantee === role).map((p) => p.name);
  const shown = names.slice(0, 3).join(', ');
  return names.length > 3 ? `${shown} and ${names.length - 3} more` : shown;
}

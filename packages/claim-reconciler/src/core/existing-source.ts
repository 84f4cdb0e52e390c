/**
 * `useExistingSource: true`: the claim gets no database of its own. Its users are created
 * and rotated IN PLACE on the existing database that `sourceDataFrom` names by a DSN (file
 * in folder mode, Secret in the controller), and its secret points there. The DSN's login
 * acts as the master for that database, so it must be able to create roles and to grant on
 * the database (checked each pass before anything is created, naming what it lacks).
 *
 * The database is never the claim's: no deletion policy drops it; the claim's login users
 * follow the policy. Naming another claim's database (`claimRef`) is refused when the claim
 * is parsed: two claims would share one database.
 */
import { dirname } from 'node:path';
import type { Binding, DeletionPolicy } from './binding.js';
import type { ClaimContext } from './claim-context.js';
import type { DatabaseClaim } from './claim-schema.js';
import type { ClaimStatus } from './claim-status.js';
import { type InstanceTarget, instanceId } from './instance-target.js';
import type { MasterConnection } from './master-connection.js';
import { readSourceDsn, SeedSourceError } from './seed-endpoints.js';
import { describeSeedSource, type SeedSource } from './seed-source.js';

/** `label` of a binding on an existing database (it names no fragment key). */
export const EXISTING_SOURCE_LABEL = 'existing';

/** A source named by a DSN: the only kind an existing database is managed through. */
export type DsnSource = Exclude<SeedSource, { kind: 'claim' }>;

/** The DSN's login as the master target of the existing database (read now). */
export async function existingSourceTarget(
  context: ClaimContext,
  source: DsnSource,
): Promise<InstanceTarget> {
  const parts = await readSourceDsn(context, source);
  const description = describeSeedSource(source);
  return {
    label: description,
    host: parts.host,
    port: parts.port,
    homeDatabase: parts.database,
    fragment: {
      label: description,
      host: parts.host,
      port: parts.port,
      username: parts.user,
      sslmode: parts.sslmode,
      ...(parts.sslrootcert === undefined ? {} : { sslrootcert: parts.sslrootcert }),
      // Read again at each connection, so a DSN whose password was rotated is followed.
      password: {
        kind: 'dsn',
        description,
        watchPaths: source.kind === 'dsn-file' ? [dirname(source.file)] : [],
        read: async () => (await readSourceDsn(context, source)).password,
      },
      deletionPolicy: undefined,
    },
  };
}

/** Where a `useExistingSource` claim's users live, and the master target that manages them. */
export async function existingSourceBinding(
  context: ClaimContext,
  claim: DatabaseClaim,
  deletionPolicy: DeletionPolicy,
): Promise<{ readonly binding: Binding; readonly target: InstanceTarget }> {
  const source = claim.sourceDataFrom;
  if (source === undefined || source.kind === 'claim')
    throw new SeedSourceError('useExistingSource needs sourceDataFrom naming a DSN file or Secret');
  const target = await existingSourceTarget(context, source);
  return {
    target,
    binding: {
      label: EXISTING_SOURCE_LABEL,
      host: target.host,
      port: target.port,
      databaseName: target.homeDatabase!,
      userName: claim.userName,
      deletionPolicy,
      existingSource: source,
    },
  };
}

/**
 * Why the claim of `status` cannot start using `binding` in place, if it cannot: its data
 * is in another database already, and moving it INTO an existing database is not done
 * (the existing database's own data would be mixed with it).
 */
export function existingSourceSwitchProblem(
  status: ClaimStatus | undefined,
  binding: Binding,
): string | undefined {
  const current = status?.binding;
  if (!current) return undefined;
  const same =
    current.host === binding.host &&
    current.port === binding.port &&
    current.databaseName === binding.databaseName;
  if (same) return undefined;
  return (
    `useExistingSource: the claim's database is ${instanceId(current)}/${current.databaseName}; ` +
    `it cannot switch to managing ${instanceId(binding)}/${binding.databaseName} in place ` +
    '(its data would have to move into a database that is not its own); drop useExistingSource'
  );
}

/**
 * Checks that the DSN's login may manage users on its database: create roles, and grant on
 * the database and its schema `public`. Throws a {@link SeedSourceError} naming the DSN
 * source and each missing privilege (never the password).
 */
export async function assertCanManageInPlace(master: MasterConnection, binding: Binding): Promise<void> {
  const { rows } = await master.query<{
    superuser: boolean;
    createrole: boolean;
    grant_database: boolean;
    grant_schema: boolean;
  }>(
    `SELECT r.rolsuper AS superuser, r.rolcreaterole AS createrole,
            has_database_privilege(current_database(), 'CREATE WITH GRANT OPTION') AS grant_database,
            CASE WHEN EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = 'public')
                 THEN has_schema_privilege('public', 'CREATE WITH GRANT OPTION') ELSE false END AS grant_schema
       FROM pg_roles r WHERE r.rolname = current_user`,
  );
  const found = rows[0];
  if (found?.superuser) return;
  const where = `${instanceId(binding)}/${binding.databaseName}`;
  const missing = [
    ...(found?.createrole ? [] : ["CREATEROLE (to create the claim's roles)"]),
    ...(found?.grant_database
      ? []
      : [
          `the right to grant on database ${binding.databaseName} (own it, or hold CREATE WITH GRANT OPTION on it)`,
        ]),
    ...(found?.grant_schema ? [] : ['the right to grant on its schema public (CREATE WITH GRANT OPTION)']),
  ];
  if (missing.length === 0) return;
  const source = binding.existingSource ? describeSeedSource(binding.existingSource) : 'the DSN';
  throw new SeedSourceError(
    `useExistingSource: the login ${master.target.fragment.username} of ${source} cannot manage users on ${where}: it lacks ${missing.join('; ')}`,
  );
}

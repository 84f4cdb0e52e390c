/**
 * The database side of a claim, on one instance through its master connection: observe
 * what exists, then create what is missing. Every statement is idempotent or treats
 * "already exists" as success, so a run killed between any two statements converges.
 */
import type { MasterConnection } from './master-connection.js';
import { MANAGED_ROLE_MARKER } from './role-marker.js';
import { scramSha256Verifier } from './scram-verifier.js';
import { quoteIdentifier, quoteLiteral } from './sql-identifiers.js';
import { performStep, type StepHook } from './steps.js';

/** SQLSTATE codes treated as "someone (an earlier, crashed run) already did it". */
const DUPLICATE_DATABASE = '42P04';
const DUPLICATE_OBJECT = '42710';
/** A concurrent CREATE of the same name can also surface as a catalog unique violation. */
const UNIQUE_VIOLATION = '23505';

function alreadyExists(error: unknown, code: string): boolean {
  const actual = (error as { code?: string }).code;
  return actual === code || actual === UNIQUE_VIOLATION;
}

/**
 * The base role's comment also names the one publisher of the claim's secret (an output
 * folder, or the controller): `<marker>; publisher <id>`. A second publisher (a
 * second --out) would set a fresh password on a user the first one publishes, so it is
 * refused (see `EnsureOptions.publisher`).
 */
export function publisherComment(publisher: string): string {
  return `${MANAGED_ROLE_MARKER}; publisher ${publisher}`;
}

/** SQL: whether the comment `expression` carries the marker ($marker is its parameter). */
function managedSql(expression: string, marker: string): string {
  return `COALESCE(${expression} = ${marker} OR starts_with(${expression}, ${marker} || '; '), false)`;
}

/** The database and role names a claim owns. */
export interface ClaimNames {
  /** The claim's database. */
  readonly database: string;
  /** NOLOGIN role that owns the database and holds the privileges. */
  readonly baseRole: string;
  /** The two login users, `<userName>_a` and `<userName>_b`, members of the base role. */
  readonly users: readonly [string, string];
}

/** Names derived from a claim's `userName` and resolved database name. */
export function claimNames(userName: string, database: string): ClaimNames {
  return { database, baseRole: userName, users: [`${userName}_a`, `${userName}_b`] };
}

/** What exists on the instance for a claim. */
export interface ObservedDatabase {
  readonly databaseOwner: string | undefined;
  readonly roles: ReadonlyMap<string, ObservedRole>;
}

/** One existing role. */
export interface ObservedRole {
  readonly canLogin: boolean;
  readonly superuser: boolean;
  /**
   * Powers a role of ours never has: `CREATEROLE`, `CREATEDB`, `REPLICATION`, `BYPASSRLS`,
   * and membership in any role other than the claim's base role. Empty for roles we created.
   */
  readonly privileges: readonly string[];
  readonly memberOfBase: boolean;
  /** The login user's sessions switch to the base role (`ALTER ROLE … SET role`). */
  readonly actsAsBase: boolean;
  /** The role carries {@link MANAGED_ROLE_MARKER}: this reconciler created it. */
  readonly managed: boolean;
  /** The publisher its comment names ({@link publisherComment}); base role only. */
  readonly publisher: string | undefined;
}

/** What {@link Provisioner.dropRoles} did. */
export interface DropRolesResult {
  readonly dropped: readonly string[];
  /** Existing roles left in place because this reconciler did not create them. */
  readonly kept: readonly string[];
}

/**
 * What {@link Provisioner.dropDatabase} did: `dropped`, `absent` (nothing to drop), or
 * `not-ours` (its owner is not a role this reconciler created, so it was left in place).
 */
export type DropDatabaseResult = 'dropped' | 'absent' | 'not-ours';

/** Options of {@link Provisioner.ensure}. */
export interface EnsureOptions {
  /**
   * Who publishes the claim's secret. Recorded on the base role; a base role that names
   * another publisher is refused, unless `takeOver`.
   */
  readonly publisher?: string;
  /** Record `publisher` even over another one (its folder is gone for good). */
  readonly takeOver?: boolean;
}

/** What {@link Provisioner.ensure} changed. */
export interface EnsureResult {
  readonly databaseCreated: boolean;
  readonly rolesCreated: readonly string[];
}

/** A role or database that exists but cannot safely be used for the claim. */
export class ProvisioningConflictError extends Error {
  /** Always `ProvisioningConflictError`. */
  override readonly name = 'ProvisioningConflictError';
}

/** Creates, checks and drops one claim's database objects on one instance. */
export class Provisioner {
  constructor(
    private readonly master: MasterConnection,
    private readonly names: ClaimNames,
    /** Announces a write; false means "do not perform it" (a dry run). */
    private readonly step: (action: string) => Promise<boolean>,
  ) {}

  /** Builds a provisioner whose steps are reported to `hook` for `claim`. */
  static create(
    master: MasterConnection,
    names: ClaimNames,
    claim: string,
    hook: StepHook | undefined,
  ): Provisioner {
    return new Provisioner(master, names, (action) => performStep(hook, { claim, action }));
  }

  /** Reads the database owner and the claim's roles. */
  async observe(): Promise<ObservedDatabase> {
    const { baseRole, users } = this.names;
    const databaseOwner = await this.databaseOwner();
    const roles = await this.master.query<{
      rolname: string;
      rolcanlogin: boolean;
      rolsuper: boolean;
      privileges: string[];
      member: boolean;
      acts_as_base: boolean;
      managed: boolean;
      publisher: string | null;
    }>(
      `SELECT r.rolname, r.rolcanlogin, r.rolsuper,
              array_remove(ARRAY[
                CASE WHEN r.rolcreaterole THEN 'CREATEROLE' END,
                CASE WHEN r.rolcreatedb THEN 'CREATEDB' END,
                CASE WHEN r.rolreplication THEN 'REPLICATION' END,
                CASE WHEN r.rolbypassrls THEN 'BYPASSRLS' END
              ] || ARRAY(SELECT 'member of ' || g.rolname FROM pg_auth_members m
                           JOIN pg_roles g ON g.oid = m.roleid
                          WHERE m.member = r.oid AND g.rolname <> $2::text
                          ORDER BY g.rolname), NULL) AS privileges,
              COALESCE(format('role=%s', $2::text) = ANY(r.rolconfig), false) AS acts_as_base,
              EXISTS (SELECT 1 FROM pg_auth_members m JOIN pg_roles b ON b.oid = m.roleid
                      WHERE m.member = r.oid AND b.rolname = $2::text) AS member,
              ${managedSql("shobj_description(r.oid, 'pg_authid')", '$3::text')} AS managed,
              substring(shobj_description(r.oid, 'pg_authid') from '; publisher (.*)$') AS publisher
         FROM pg_roles r WHERE r.rolname = ANY($1::text[])`,
      [[baseRole, ...users], baseRole, MANAGED_ROLE_MARKER],
    );
    return {
      databaseOwner,
      roles: new Map(
        roles.rows.map((r) => [
          r.rolname,
          {
            canLogin: r.rolcanlogin,
            superuser: r.rolsuper,
            privileges: r.privileges,
            memberOfBase: r.member,
            actsAsBase: r.acts_as_base,
            managed: r.managed,
            publisher: r.publisher ?? undefined,
          },
        ]),
      ),
    };
  }

  private async databaseOwner(): Promise<string | undefined> {
    const { rows } = await this.master.query<{ owner: string }>(
      'SELECT pg_get_userbyid(datdba) AS owner FROM pg_database WHERE datname = $1',
      [this.names.database],
    );
    return rows[0]?.owner;
  }

  /** Creates whatever is missing: base role, database, login users, memberships, grants. */
  async ensure(options: EnsureOptions = {}): Promise<EnsureResult> {
    const { baseRole, users } = this.names;
    const observed = await this.observe();
    this.refuseForeignRoles(observed);
    const rolesCreated: string[] = [];
    const base = observed.roles.get(baseRole);
    const comment =
      options.publisher === undefined ? MANAGED_ROLE_MARKER : publisherComment(options.publisher);
    if (!base) {
      if (await this.createRole(baseRole, `CREATE ROLE ${quoteIdentifier(baseRole)} NOLOGIN`, comment))
        rolesCreated.push(baseRole);
    } else if (options.publisher !== undefined && base.publisher !== options.publisher) {
      if (base.publisher !== undefined && !options.takeOver) throw this.otherPublisher(base.publisher);
      if (await this.step(`record-publisher ${baseRole}`))
        await this.master.query(`COMMENT ON ROLE ${quoteIdentifier(baseRole)} IS ${quoteLiteral(comment)}`);
    }
    let databaseCreated = false;
    if (observed.databaseOwner === undefined) databaseCreated = await this.createDatabase();
    // Created meanwhile by another claim (or pre-existing): work in it without owning it.
    const owner = databaseCreated ? baseRole : (observed.databaseOwner ?? (await this.databaseOwner()));
    if (owner !== baseRole) await this.grantOnSharedDatabase();
    for (const user of users) {
      const role = observed.roles.get(user);
      if (!role) {
        const sql = `CREATE ROLE ${quoteIdentifier(user)} LOGIN IN ROLE ${quoteIdentifier(baseRole)}`;
        if (await this.createRole(user, sql)) rolesCreated.push(user);
      } else if (!role.memberOfBase) {
        if (await this.step(`grant-membership ${user}`))
          await this.master.query(`GRANT ${quoteIdentifier(baseRole)} TO ${quoteIdentifier(user)}`);
      }
      if (!role?.actsAsBase) {
        // Sessions of either user run as the base role, so whatever one user creates the
        // other can use after a rotation (objects are owned by the base role, not by _a/_b).
        if (await this.step(`set-session-role ${user}`))
          await this.master.query(`ALTER ROLE ${quoteIdentifier(user)} SET role = ${quoteLiteral(baseRole)}`);
      }
    }
    return { databaseCreated, rolesCreated };
  }

  /**
   * Sets `user`'s password. Only its SCRAM-SHA-256 verifier is sent, so the clear text
   * never reaches the server (statement log, error reports, pg_stat_activity). Resolves
   * false when a dry run skipped it.
   */
  async setPassword(user: string, password: string): Promise<boolean> {
    if (!(await this.step(`set-password ${user}`))) return false;
    const verifier = await scramSha256Verifier(password);
    await this.master.query(
      `ALTER ROLE ${quoteIdentifier(user)} WITH LOGIN PASSWORD ${quoteLiteral(verifier)}`,
    );
    return true;
  }

  /**
   * Drops the database (the `Delete` policy), but only one this reconciler created: a
   * database whose owner (`pg_database.datdba`) carries {@link MANAGED_ROLE_MARKER}. The
   * reconciler creates databases `OWNER <base role>` and marks that role in its
   * `CREATE ROLE` transaction, so the rule needs no other state and holds after any crash.
   * A database owned by anyone else (pre-existing, reached through a GRANT) is left in place
   * (`not-ours`). Fails with pg's "object in use" error (55006) while sessions are still
   * connected; the caller keeps it pending and retries.
   */
  async dropDatabase(): Promise<DropDatabaseResult> {
    const { database } = this.names;
    const { rows } = await this.master.query<{ managed: boolean }>(
      `SELECT ${managedSql("shobj_description(d.datdba, 'pg_authid')", '$2::text')} AS managed
         FROM pg_database d WHERE d.datname = $1`,
      [database, MANAGED_ROLE_MARKER],
    );
    const found = rows[0];
    if (!found) return 'absent';
    if (!found.managed) return 'not-ours';
    if (await this.step(`drop-database ${database}`))
      await this.master.query(`DROP DATABASE IF EXISTS ${quoteIdentifier(database)}`);
    return 'dropped';
  }

  /**
   * Takes the login users' access away and keeps everything else (the controller's deletion
   * guard): `NOLOGIN` on each login user this reconciler created, then their sessions are
   * ended, so the old credentials stop working at once. Resolves with the users disabled.
   */
  async disableLogins(): Promise<string[]> {
    const { roles } = await this.observe();
    const disabled = this.names.users.filter((user) => roles.get(user)?.managed === true);
    for (const user of disabled) {
      if (await this.step(`disable-login ${user}`))
        await this.master.query(`ALTER ROLE ${quoteIdentifier(user)} NOLOGIN`);
    }
    if (disabled.length > 0 && (await this.step('terminate-sessions'))) {
      await this.master.query(
        'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = ANY($1::text[]) AND pid <> pg_backend_pid()',
        [disabled],
      );
    }
    return disabled;
  }

  /**
   * Drops the two login users and the base role (the `Delete` policy), but only those this
   * reconciler created ({@link MANAGED_ROLE_MARKER}); any other role of that name is kept.
   * `login-users` keeps the base role (it holds privileges in a database that stays).
   */
  async dropRoles(which: 'all' | 'login-users' = 'all'): Promise<DropRolesResult> {
    const { baseRole, users } = this.names;
    const { roles } = await this.observe();
    const dropped: string[] = [];
    const kept: string[] = [];
    for (const role of which === 'all' ? [...users, baseRole] : users) {
      const observed = roles.get(role);
      if (!observed) continue;
      if (!observed.managed) {
        kept.push(role);
        continue;
      }
      if (await this.step(`drop-role ${role}`))
        await this.master.query(`DROP ROLE IF EXISTS ${quoteIdentifier(role)}`);
      dropped.push(role);
    }
    return { dropped, kept };
  }

  /**
   * An existing database used in place (`useExistingSource`): the base role gets the tables
   * and sequences already in schema `public` (the application reads the data that was
   * there). Only when one lacks a grant, so a pass with nothing new writes nothing.
   */
  async grantExistingObjects(): Promise<boolean> {
    const { database, baseRole } = this.names;
    return this.master.inDatabase(database, async (client) => {
      const { rows } = await client.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = 'public' AND (
                (c.relkind IN ('r', 'p', 'v', 'm', 'f') AND NOT has_table_privilege($1, c.oid, 'SELECT'))
             OR (c.relkind = 'S' AND NOT has_sequence_privilege($1, c.oid, 'USAGE')))`,
        [baseRole],
      );
      if (rows[0]?.n === 0 || !(await this.step(`grant-existing-objects ${database}.public`))) return false;
      await client.query(`GRANT ALL ON ALL TABLES IN SCHEMA public TO ${quoteIdentifier(baseRole)}`);
      await client.query(`GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO ${quoteIdentifier(baseRole)}`);
      return true;
    });
  }

  /**
   * A pre-existing role with our name that is a superuser, holds other powers (CREATEROLE,
   * membership in another role, …), or a base role that can log in, is not ours: adopting
   * it would hand its powers to whoever wrote the claim. Nor is any role without
   * {@link MANAGED_ROLE_MARKER}: adopting it would reset its password and publish it.
   */
  private refuseForeignRoles(observed: ObservedDatabase): void {
    for (const [name, role] of observed.roles) {
      if (role.superuser)
        throw new ProvisioningConflictError(`role ${name} exists and is a superuser; refusing to manage it`);
      if (role.privileges.length > 0) {
        throw new ProvisioningConflictError(
          `role ${name} exists with ${role.privileges.join(', ')}; refusing to manage it`,
        );
      }
      if (name === this.names.baseRole && role.canLogin) {
        throw new ProvisioningConflictError(
          `role ${name} exists and can log in; the base role must be NOLOGIN`,
        );
      }
    }
    const unmarked = [...observed.roles].filter(([, role]) => !role.managed).map(([name]) => name);
    if (unmarked.length > 0) throw notOurs(unmarked);
  }

  /**
   * Creates `role` and marks it ({@link MANAGED_ROLE_MARKER}) in one transaction, so no crash
   * leaves a role of ours unmarked. A role that appeared meanwhile (42710) is adopted only
   * if it carries the marker (a concurrent run of ours created it).
   */
  private async createRole(role: string, sql: string, comment = MANAGED_ROLE_MARKER): Promise<boolean> {
    if (!(await this.step(`create-role ${role}`))) return true;
    try {
      await this.master.transaction([
        sql,
        `COMMENT ON ROLE ${quoteIdentifier(role)} IS ${quoteLiteral(comment)}`,
      ]);
      return true;
    } catch (error) {
      if (!alreadyExists(error, DUPLICATE_OBJECT)) throw error;
    }
    const { rows } = await this.master.query<{ managed: boolean }>(
      `SELECT ${managedSql("shobj_description(oid, 'pg_authid')", '$2::text')} AS managed
         FROM pg_roles WHERE rolname = $1`,
      [role, MANAGED_ROLE_MARKER],
    );
    if (!rows[0]?.managed) throw notOurs([role]);
    return false;
  }

  private otherPublisher(publisher: string): ProvisioningConflictError {
    return new ProvisioningConflictError(
      `users ${this.names.users.join(', ')} are published by another output (publisher ${publisher}); ` +
        'a second one would set passwords the first one does not publish, so this one refuses. ' +
        'Reconcile the claim from one --out only; if that output is gone for good, run once with --take-over',
    );
  }

  /** CREATE DATABASE cannot run in a transaction and has no IF NOT EXISTS: 42P04 means done. */
  private async createDatabase(): Promise<boolean> {
    const { database, baseRole } = this.names;
    if (!(await this.step(`create-database ${database}`))) return true;
    try {
      await this.master.query(
        `CREATE DATABASE ${quoteIdentifier(database)} OWNER ${quoteIdentifier(baseRole)}`,
      );
      return true;
    } catch (error) {
      if (alreadyExists(error, DUPLICATE_DATABASE)) return false;
      throw error;
    }
  }

  /**
   * A database owned by another role (shared with another claim, or pre-existing): grant the
   * base role what an owner would need to work in it, without taking ownership away.
   */
  private async grantOnSharedDatabase(): Promise<void> {
    const { database, baseRole } = this.names;
    // CREATE on the database is granted last, so it marks both grants as done.
    const granted = await this.master.query<{ ok: boolean }>(
      `SELECT has_database_privilege($1, $2, 'CREATE') AS ok`,
      [baseRole, database],
    );
    if (granted.rows[0]?.ok) return;
    if (await this.step(`grant-schema ${database}.public`)) {
      await this.master.inDatabase(database, (client) =>
        client.query(`GRANT ALL ON SCHEMA public TO ${quoteIdentifier(baseRole)}`),
      );
    }
    if (await this.step(`grant-database ${database}`))
      await this.master.query(
        `GRANT ALL PRIVILEGES ON DATABASE ${quoteIdentifier(database)} TO ${quoteIdentifier(baseRole)}`,
      );
  }
}

function notOurs(roles: readonly string[]): ProvisioningConflictError {
  const which = roles.length === 1 ? `role ${roles[0]} exists` : `roles ${roles.join(', ')} exist`;
  return new ProvisioningConflictError(
    `${which} but ${roles.length === 1 ? 'was' : 'were'} not created by hotload-claim-reconciler ` +
      `(no '${MANAGED_ROLE_MARKER}' comment); refusing to manage ${roles.length === 1 ? 'it' : 'them'}`,
  );
}

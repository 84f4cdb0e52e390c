/**
 * The logical replication link of one migration: a publication of the claim's tables on
 * the source, a dedicated replication login there, and a subscription on the target that
 * creates the slot, copies the tables and then streams. Each `ensure` looks first and
 * creates only what is missing; `remove` drops whatever exists. Together with the fixed
 * name (replication-names.ts) that is what makes a killed run converge: no second
 * publication or subscription, no slot left behind.
 *
 * The login's password travels only inside the subscription's connection string, which
 * PostgreSQL keeps in `pg_subscription` (readable by superusers only). It is never logged
 * here, the statement that carries it runs with statement logging off where the master may
 * change that, and the login is dropped with the link.
 */

import { generatePassword } from '../core/password-generator.js';
import { MANAGED_ROLE_MARKER } from '../core/role-marker.js';
import { scramSha256Verifier } from '../core/scram-verifier.js';
import { quoteIdentifier, quoteLiteral } from '../core/sql-identifiers.js';
import type { SslModeSetting } from '../core/ssl-mode.js';
import type { SqlClient } from './sql-client.js';

/** How the target server reaches the source (host/port as the target resolves them). */
export interface SourceAddress {
  readonly host: string;
  readonly port: number;
  readonly database: string;
  readonly sslmode: SslModeSetting;
}

/** Wait between checks while a dropped subscription's walsender lets go of the slot. */
const SLOT_RELEASE_POLL_MILLIS = 50;
const SLOT_RELEASE_TIMEOUT_MILLIS = 10_000;

/** One migration's publication, slot, login and subscription. */
export class ReplicationLink {
  constructor(
    /** Shared name of every object (see replicationName). */
    readonly name: string,
    private readonly step: (action: string) => Promise<void>,
  ) {}

  /** Creates the publication for `tables` (qualified names) unless it exists. */
  async ensurePublication(source: SqlClient, tables: readonly string[]): Promise<void> {
    const { rows } = await source.query('SELECT 1 FROM pg_publication WHERE pubname = $1', [this.name]);
    if (rows.length > 0) return;
    await this.step('create-publication');
    const list = tables.length > 0 ? ` FOR TABLE ${tables.join(', ')}` : '';
    await source.query(`CREATE PUBLICATION ${quoteIdentifier(this.name)}${list}`);
  }

  /** Whether the subscription exists on the target. */
  async hasSubscription(target: SqlClient): Promise<boolean> {
    const { rows } = await target.query('SELECT 1 FROM pg_subscription WHERE subname = $1', [this.name]);
    return rows.length > 0;
  }

  /**
   * Creates the subscription unless it exists: drops a slot a killed run left without its
   * subscription, empties the target tables (nothing but an earlier copy can be in them:
   * the application is not there yet), sets a fresh password on the replication login and
   * subscribes with it (initial copy, then streaming). With `slotFirst` the slot is created
   * on the source before the subscription (needed when both are on one server).
   */
  async ensureSubscription(
    source: SqlClient,
    target: SqlClient,
    address: SourceAddress,
    readerRole: string,
    tables: readonly string[],
    slotFirst = false,
  ): Promise<void> {
    if (await this.hasSubscription(target)) return;
    await this.dropSlot(source);
    if (slotFirst) {
      // A subscription cannot create its slot on its own server in the same command (the
      // command waits for its own transaction): made here first, the subscription uses it.
      await this.step('create-replication-slot');
      await source.query(`SELECT pg_create_logical_replication_slot($1, 'pgoutput')`, [this.name]);
    }
    if (tables.length > 0) {
      await this.step('truncate-target-tables');
      await target.query(`TRUNCATE ${tables.join(', ')}`);
    }
    const password = generatePassword({ complexity: true, minLength: 32 });
    await this.ensureLogin(source, readerRole, password);
    await this.step('create-subscription');
    const conninfo = [
      ['host', address.host],
      ['port', String(address.port)],
      ['dbname', address.database],
      ['user', this.name],
      ['password', password],
      ['sslmode', address.sslmode],
      ['application_name', this.name],
    ]
      .map(([key, value]) => `${key}=${conninfoValue(value!)}`)
      .join(' ');
    // Best effort: only a superuser may turn statement logging off for its session.
    await target.query(`SET log_statement = 'none'`).catch(() => {});
    await target.query(`SET log_min_error_statement = 'panic'`).catch(() => {});
    // synchronous_commit = local: the apply worker flushes each applied commit and says so
    // at once; with the default (off) the target's WAL writer flushes it up to
    // wal_writer_delay (200 ms) later, and every source commit waits that long while the
    // switch holds apply synchronous (synchronous-apply.ts).
    await target.query(
      `CREATE SUBSCRIPTION ${quoteIdentifier(this.name)} CONNECTION ${quoteLiteral(conninfo)}
         PUBLICATION ${quoteIdentifier(this.name)}
         WITH (slot_name = ${quoteLiteral(this.name)}, create_slot = ${slotFirst ? 'false' : 'true'}, copy_data = true,
               synchronous_commit = 'local')`,
    );
    await target.query('RESET log_statement').catch(() => {});
    await target.query('RESET log_min_error_statement').catch(() => {});
  }

  /**
   * Drops the subscription (when the target is reachable), the slot, the publication and
   * the replication login; each only if it exists. With `target` undefined (the target is
   * gone) the slot is dropped on the source all the same, so the source keeps no WAL for it.
   */
  async remove(source: SqlClient, target: SqlClient | undefined): Promise<void> {
    if (target && (await this.hasSubscription(target))) {
      await this.step('drop-subscription');
      const sub = quoteIdentifier(this.name);
      // Detach the slot first, so dropping the subscription needs no connection to the source.
      await target.query(`ALTER SUBSCRIPTION ${sub} DISABLE`);
      await target.query(`ALTER SUBSCRIPTION ${sub} SET (slot_name = NONE)`);
      await target.query(`DROP SUBSCRIPTION ${sub}`);
    }
    await this.dropSlot(source);
    const publication = await source.query('SELECT 1 FROM pg_publication WHERE pubname = $1', [this.name]);
    if (publication.rows.length > 0) {
      await this.step('drop-publication');
      await source.query(`DROP PUBLICATION IF EXISTS ${quoteIdentifier(this.name)}`);
    }
    const login = await source.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [this.name]);
    if (login.rows.length > 0) {
      await this.step('drop-replication-login');
      await source.query(
        'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1 AND pid <> pg_backend_pid()',
        [this.name],
      );
      await source.query(`DROP ROLE IF EXISTS ${quoteIdentifier(this.name)}`);
    }
  }

  /** Whether the slot exists on the source. */
  async hasSlot(source: SqlClient): Promise<boolean> {
    const { rows } = await source.query('SELECT 1 FROM pg_replication_slots WHERE slot_name = $1', [
      this.name,
    ]);
    return rows.length > 0;
  }

  /** Drops the slot if it exists, first ending a walsender still holding it. */
  private async dropSlot(source: SqlClient): Promise<void> {
    if (!(await this.hasSlot(source))) return;
    await this.step('drop-replication-slot');
    const deadline = Date.now() + SLOT_RELEASE_TIMEOUT_MILLIS;
    for (;;) {
      const { rows } = await source.query<{ active_pid: number | null }>(
        'SELECT active_pid FROM pg_replication_slots WHERE slot_name = $1',
        [this.name],
      );
      const slot = rows[0];
      if (!slot) return;
      if (slot.active_pid === null) {
        await source.query('SELECT pg_drop_replication_slot($1)', [this.name]);
        return;
      }
      if (Date.now() > deadline) await source.query('SELECT pg_terminate_backend($1)', [slot.active_pid]);
      await new Promise((resolve) => setTimeout(resolve, SLOT_RELEASE_POLL_MILLIS));
    }
  }

  /** The dedicated login the subscription connects as: may replicate, reads as `readerRole`. */
  private async ensureLogin(source: SqlClient, readerRole: string, password: string): Promise<void> {
    const role = quoteIdentifier(this.name);
    const verifier = quoteLiteral(await scramSha256Verifier(password));
    const { rows } = await source.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [this.name]);
    await this.step('set-replication-login');
    if (rows.length > 0) {
      await source.query(`ALTER ROLE ${role} WITH LOGIN REPLICATION PASSWORD ${verifier}`);
      return;
    }
    await source.query('BEGIN');
    try {
      await source.query(`CREATE ROLE ${role} LOGIN REPLICATION PASSWORD ${verifier}`);
      await source.query(`COMMENT ON ROLE ${role} IS ${quoteLiteral(MANAGED_ROLE_MARKER)}`);
      await source.query(`GRANT ${quoteIdentifier(readerRole)} TO ${role}`);
      await source.query('COMMIT');
    } catch (error) {
      await source.query('ROLLBACK').catch(() => {});
      throw error;
    }
  }
}

/** A libpq connection-string value, quoted (`'` and `\` escaped). */
function conninfoValue(value: string): string {
  return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

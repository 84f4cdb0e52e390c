/**
 * What logical replication needs before anything is created, checked up front so a
 * source that cannot publish gets one clear error naming the setting, and the claim stays
 * where it is: `wal_level=logical`, replication slots and WAL senders on the source, a
 * master user allowed to replicate and create the replication login there, and a master
 * user on the target allowed to create a subscription.
 */
import { MigrationRefusedError } from './migration-errors.js';
import type { SqlClient } from './sql-client.js';

/** Throws a {@link MigrationRefusedError} naming what the source or target lacks. */
export async function checkReplicationPrerequisites(
  source: SqlClient,
  target: SqlClient,
  where: { source: string; target: string },
): Promise<void> {
  const { rows } = await source.query<{
    wal_level: string;
    slots: number;
    senders: number;
    user: string;
    rolsuper: boolean;
    rolreplication: boolean;
    rolcreaterole: boolean;
  }>(
    `SELECT current_setting('wal_level') AS wal_level,
            current_setting('max_replication_slots')::int AS slots,
            current_setting('max_wal_senders')::int AS senders,
            r.rolname AS user, r.rolsuper, r.rolreplication, r.rolcreaterole
       FROM pg_roles r WHERE r.rolname = current_user`,
  );
  const s = rows[0]!;
  const problems: string[] = [];
  if (s.wal_level !== 'logical') {
    problems.push(
      `source instance ${where.source} has wal_level=${s.wal_level}; an online migration needs wal_level=logical (set it in postgresql.conf and restart the server)`,
    );
  }
  if (s.slots < 1)
    problems.push(`source instance ${where.source} has max_replication_slots=0; it needs at least 1`);
  if (s.senders < 1)
    problems.push(`source instance ${where.source} has max_wal_senders=0; it needs at least 1`);
  if (!s.rolsuper && !(s.rolreplication && s.rolcreaterole)) {
    problems.push(
      `master user ${s.user} on ${where.source} needs REPLICATION and CREATEROLE (or superuser) to publish and create the replication login`,
    );
  }
  const subscriber = await target.query<{ user: string; allowed: boolean }>(
    `SELECT current_user AS user,
            (SELECT rolsuper FROM pg_roles WHERE rolname = current_user)
            OR pg_has_role(current_user, 'pg_create_subscription', 'USAGE') AS allowed`,
  );
  const t = subscriber.rows[0]!;
  if (!t.allowed) {
    problems.push(
      `master user ${t.user} on ${where.target} needs superuser or membership in pg_create_subscription to subscribe`,
    );
  }
  if (problems.length > 0) throw new MigrationRefusedError(problems.join('; '));
}

/**
 * After the secret points at the target, the application's pools switch and drain; this
 * waits for the claim's login users to leave the source database, terminates whoever is
 * left after the grace period, and then takes LOGIN away from those users on the source so
 * a client that missed the switch cannot write there after the final WAL position is read.
 * (Setting a password again, as provisioning does, gives LOGIN back.)
 */
import { quoteIdentifier } from '../core/sql-identifiers.js';
import type { SqlClient } from './sql-client.js';

const POLL_MILLIS = 50;

/** What {@link drainSource} saw. */
export interface DrainResult {
  /** Sessions terminated after the grace period (0 when the pools drained on their own). */
  readonly terminated: number;
}

/** Sessions of `users` in `database`. */
async function sessions(source: SqlClient, database: string, users: readonly string[]): Promise<number[]> {
  const { rows } = await source.query<{ pid: number }>(
    `SELECT pid FROM pg_stat_activity WHERE datname = $1 AND usename = ANY($2::text[]) AND pid <> pg_backend_pid()`,
    [database, users],
  );
  return rows.map((r) => r.pid);
}

/**
 * Waits up to `graceMillis` for no session of `users` on `database`, terminates the rest,
 * then sets the users NOLOGIN (and ends any session that slipped in meanwhile).
 */
export async function drainSource(
  source: SqlClient,
  database: string,
  users: readonly string[],
  graceMillis: number,
  step: (action: string) => Promise<void>,
): Promise<DrainResult> {
  const deadline = Date.now() + graceMillis;
  let remaining = await sessions(source, database, users);
  while (remaining.length > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, POLL_MILLIS));
    remaining = await sessions(source, database, users);
  }
  const terminated = remaining.length;
  const { rows } = await source.query<{ rolname: string }>(
    'SELECT rolname FROM pg_roles WHERE rolname = ANY($1::text[]) AND rolcanlogin ORDER BY 1',
    [users],
  );
  if (rows.length > 0) await step('lock-source-logins');
  for (const { rolname } of rows) await source.query(`ALTER ROLE ${quoteIdentifier(rolname)} NOLOGIN`);
  remaining = await sessions(source, database, users);
  if (remaining.length > 0) await step('terminate-source-sessions');
  while (remaining.length > 0) {
    await source.query('SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid', [remaining]);
    await new Promise((resolve) => setTimeout(resolve, POLL_MILLIS));
    remaining = await sessions(source, database, users);
  }
  return { terminated };
}

/**
 * Where a migration's replication stands, read from both ends: tables whose initial copy
 * is done (target `pg_subscription_rel`), lag in bytes (source WAL position minus what the
 * slot's consumer confirmed) and seconds (target `pg_stat_subscription`), rows copied, and
 * the apply/sync error and conflict counters (`pg_stat_subscription_stats`), which are how
 * a change the target refused (say, a unique violation) becomes visible.
 */
import type { SqlClient } from './sql-client.js';

/** One reading of a replication link. */
export interface ReplicationProgress {
  readonly tablesTotal: number;
  /** Tables in state `r` (ready): copied and now streamed. */
  readonly tablesReady: number;
  /** Bytes of source WAL the target has not confirmed; null before the slot exists. */
  readonly lagBytes: number | null;
  /** Seconds since the target last confirmed a position, when it is behind; else 0. */
  readonly lagSeconds: number | null;
  /** Non-zero error and conflict counters by name, e.g. `{ apply_error_count: 2 }`. */
  readonly errors: Readonly<Record<string, number>>;
}

/** Reads the progress of the link named `name`. */
export async function readReplicationProgress(
  source: SqlClient,
  target: SqlClient,
  name: string,
): Promise<ReplicationProgress> {
  const tables = await target.query<{ total: number; ready: number }>(
    `SELECT count(*)::int AS total, count(*) FILTER (WHERE r.srsubstate = 'r')::int AS ready
       FROM pg_subscription_rel r JOIN pg_subscription s ON s.oid = r.srsubid WHERE s.subname = $1`,
    [name],
  );
  const slot = await source.query<{ lag: string | null }>(
    `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)::bigint::text AS lag
       FROM pg_replication_slots WHERE slot_name = $1`,
    [name],
  );
  const lagBytes = slot.rows[0]?.lag == null ? null : Math.max(0, Number(slot.rows[0].lag));
  const seconds = await target.query<{ seconds: number | null }>(
    `SELECT EXTRACT(epoch FROM now() - max(latest_end_time))::float8 AS seconds
       FROM pg_stat_subscription WHERE subname = $1`,
    [name],
  );
  const stats = await target.query<{ stats: Record<string, unknown> }>(
    'SELECT to_jsonb(s) AS stats FROM pg_stat_subscription_stats s WHERE subname = $1',
    [name],
  );
  return {
    tablesTotal: tables.rows[0]?.total ?? 0,
    tablesReady: tables.rows[0]?.ready ?? 0,
    lagBytes,
    lagSeconds: lagBytes === 0 ? 0 : (seconds.rows[0]?.seconds ?? null),
    errors: errorCounters(stats.rows[0]?.stats ?? {}),
  };
}

/** Whether the slot's consumer confirmed the source position `lsn`. */
export async function confirmedPosition(source: SqlClient, name: string, lsn: string): Promise<boolean> {
  const { rows } = await source.query<{ ok: boolean | null }>(
    'SELECT confirmed_flush_lsn >= $2::pg_lsn AS ok FROM pg_replication_slots WHERE slot_name = $1',
    [name, lsn],
  );
  return rows[0]?.ok === true;
}

/**
 * A source WAL position that comes after every commit made so far, including commits made
 * with `synchronous_commit = off` whose records are not written yet (so
 * `pg_current_wal_lsn()`, the *write* position, may lie before them). It is the start of
 * a logical message emitted (and flushed) now: every earlier record precedes it in the
 * WAL, and a consumer that confirmed it has seen them all.
 */
export async function finalWalPosition(source: SqlClient): Promise<string> {
  const emit = (flush: boolean) =>
    source.query<{ lsn: string }>(
      `SELECT pg_logical_emit_message(false, 'hotload-migration', 'final position'${flush ? ', true' : ''})::text AS lsn`,
    );
  // The flush argument exists from PostgreSQL 17; before that the WAL writer flushes within wal_writer_delay.
  const { rows } = await emit(true).catch((error: { code?: string }) => {
    if (error.code === '42883') return emit(false);
    throw error;
  });
  return rows[0]!.lsn;
}

/** Exact row counts of `tables` (qualified names) summed. */
export async function countRows(client: SqlClient, tables: readonly string[]): Promise<number> {
  let total = 0;
  for (const table of tables) {
    const { rows } = await client.query<{ n: string }>(`SELECT count(*)::text AS n FROM ${table}`);
    total += Number(rows[0]!.n);
  }
  return total;
}

/** `*_error_count` and `confl_*` counters (PostgreSQL 18 names conflicts) that are above 0. */
function errorCounters(stats: Record<string, unknown>): Record<string, number> {
  const found: Record<string, number> = {};
  for (const [key, value] of Object.entries(stats)) {
    if (!(key.endsWith('_error_count') || key.startsWith('confl_'))) continue;
    const count = Number(value);
    if (count > 0) found[key] = count;
  }
  return found;
}

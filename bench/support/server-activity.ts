/**
 * What a PostgreSQL server did during one measured phase, read from its own statistics:
 * how many CREATE DATABASE statements ran at once and what they waited on (pg_stat_activity
 * sampled on one extra connection), checkpoints started and WAL written
 * (pg_stat_checkpointer, pg_stat_wal), and the settings it ran with, so two clusters
 * meant to be configured alike can be shown to be.
 */
import type { PostgresCluster } from 'hotload-test-support';
import pg from 'pg';

/** How often pg_stat_activity is sampled: often enough for statements of ~100 ms and more. */
const SAMPLE_MILLIS = 50;

/** Settings that differ between any two clusters by construction (port, folders). */
const PER_CLUSTER_SETTINGS = new Set(['port', 'data_directory', 'config_file', 'hba_file', 'ident_file']);

interface Counters {
  readonly checkpoints_timed: number;
  readonly checkpoints_requested: number;
  readonly wal_mb: number;
}

/** What {@link watchServer}'s stop resolves with. */
export interface ServerActivity {
  /** Mean number of CREATE DATABASE statements running at once, over samples with at least one. */
  readonly create_database_concurrency: number;
  /** Share of CREATE DATABASE samples by wait event (`CPU` when not waiting). */
  readonly create_database_waits: Record<string, number>;
  /** Mean number of other active sessions beside them, over the same samples. */
  readonly other_active_sessions: number;
  readonly checkpoints_timed: number;
  readonly checkpoints_requested: number;
  readonly wal_mb: number;
}

/** The server's non-default settings, but those that differ per cluster by construction. */
export async function serverSettings(cluster: PostgresCluster): Promise<Record<string, string>> {
  const { rows } = await cluster.query<{ name: string; setting: string }>(
    "SELECT name, setting FROM pg_settings WHERE source NOT IN ('default', 'override') ORDER BY name",
  );
  return Object.fromEntries(
    rows.filter(({ name }) => !PER_CLUSTER_SETTINGS.has(name)).map(({ name, setting }) => [name, setting]),
  );
}

/** Names of the settings whose values differ between `a` and `b` (present in only one counts). */
export function settingsDiffer(a: Record<string, string>, b: Record<string, string>): string[] {
  return [...new Set([...Object.keys(a), ...Object.keys(b)])].filter((name) => a[name] !== b[name]).sort();
}

async function counters(client: pg.Client): Promise<Counters> {
  const { rows } = await client.query<{ timed: string; requested: string; wal: string }>(
    `SELECT c.num_timed AS timed, c.num_requested AS requested, w.wal_bytes AS wal
       FROM pg_stat_checkpointer c, pg_stat_wal w`,
  );
  const row = rows[0]!;
  return {
    checkpoints_timed: Number(row.timed),
    checkpoints_requested: Number(row.requested),
    wal_mb: Number(row.wal) / (1024 * 1024),
  };
}

/**
 * Starts sampling `cluster` on a connection of its own (not counted in the samples); the
 * returned function stops and resolves with what it saw.
 */
export async function watchServer(cluster: PostgresCluster): Promise<() => Promise<ServerActivity>> {
  const client = new pg.Client(cluster.connectionConfig());
  await client.connect();
  // Its samples stay out of a statement log the phase is measured by.
  await client.query('SET log_min_duration_statement = -1');
  const before = await counters(client);
  const waits = new Map<string, number>();
  let samples = 0;
  let creating = 0;
  let others = 0;
  let stopped = false;
  const sampling = (async () => {
    while (!stopped) {
      const { rows } = await client.query<{ creating: boolean; wait: string | null }>(
        `SELECT query ILIKE 'CREATE DATABASE%' AS creating, wait_event_type || ':' || wait_event AS wait
           FROM pg_stat_activity
          WHERE state = 'active' AND backend_type = 'client backend' AND pid <> pg_backend_pid()`,
      );
      const creates = rows.filter((row) => row.creating);
      if (creates.length > 0) {
        samples++;
        creating += creates.length;
        others += rows.length - creates.length;
        for (const { wait } of creates) waits.set(wait ?? 'CPU', (waits.get(wait ?? 'CPU') ?? 0) + 1);
      }
      await new Promise((resolve) => setTimeout(resolve, SAMPLE_MILLIS));
    }
  })();
  return async () => {
    stopped = true;
    await sampling;
    const after = await counters(client);
    await client.end();
    const share = (n: number) => Number((n / Math.max(1, creating)).toFixed(3));
    return {
      create_database_concurrency: Number((creating / Math.max(1, samples)).toFixed(2)),
      create_database_waits: Object.fromEntries(
        [...waits].sort(([, a], [, b]) => b - a).map(([wait, n]) => [wait, share(n)]),
      ),
      other_active_sessions: Number((others / Math.max(1, samples)).toFixed(2)),
      checkpoints_timed: after.checkpoints_timed - before.checkpoints_timed,
      checkpoints_requested: after.checkpoints_requested - before.checkpoints_requested,
      wal_mb: Math.round(after.wal_mb - before.wal_mb),
    };
  };
}

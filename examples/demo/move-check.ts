/**
 * What the demo checks about the move to the second instance: rows on the source just
 * before the cutover, rows on the target afterwards, acknowledged writes missing on the
 * target (must be 0: the migration keeps every write the service confirmed), and the
 * longest stretch during the move with no write acknowledged (how long writes paused).
 */
import type { PostgresCluster } from 'hotload-test-support';

/** The move's figures for the summary. */
export interface MoveReport {
  /** Rows in the source table when the secret was about to switch to the target. */
  sourceRowsBeforeCutover: number | null;
  /** Rows in the target table at the end of the run. */
  targetRowsAfter: number;
  /** Writes the service acknowledged over the whole run. */
  acknowledgedWrites: number;
  /** Acknowledged writes whose row is not on the target (must be 0). */
  missingAfterMove: number;
  /** Longest gap between two write acknowledgements while the move ran (ms). */
  writePauseMs: number | null;
}

/** Rows in `table` of `database` on `cluster`. */
export async function countRows(cluster: PostgresCluster, database: string, table: string): Promise<number> {
  const { rows } = await cluster.query<{ n: string }>(
    `SELECT count(*)::text AS n FROM ${table}`,
    [],
    database,
  );
  return Number(rows[0]!.n);
}

/** How many of `ids` have no row in `table` (its `id` column). */
export async function missingIds(
  cluster: PostgresCluster,
  database: string,
  table: string,
  ids: readonly number[],
): Promise<number> {
  const { rows } = await cluster.query<{ n: string }>(
    `SELECT count(*)::text AS n FROM unnest($1::bigint[]) AS acked(id)
      WHERE NOT EXISTS (SELECT 1 FROM ${table} t WHERE t.id = acked.id)`,
    [ids],
    database,
  );
  return Number(rows[0]!.n);
}

/** The longest interval within [from, to] with no acknowledgement (times from `performance.now()`). */
export function longestGap(acknowledgedAt: readonly number[], from: number, to: number): number {
  let previous = from;
  let longest = 0;
  for (const at of [...acknowledgedAt.filter((t) => t > from && t < to), to].sort((a, b) => a - b)) {
    longest = Math.max(longest, at - previous);
    previous = at;
  }
  return longest;
}

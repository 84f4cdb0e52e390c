/**
 * What the demo checks about the move to the second instance: rows on the source just
 * before the cutover, rows on the target afterwards, acknowledged writes missing on the
 * target (must be 0: the migration keeps every write the service confirmed), and the
 * longest stretch during the move with no write acknowledged (how long writes paused).
 */
import type { CutoverReason, CutoverSettings, MigrationState } from 'hotload-claim-reconciler';
import type { PostgresCluster } from 'hotload-test-support';

/** How the move cut over: the settings it ran with and what the reconciler's status recorded. */
export interface MoveCutover {
  /** The cutover settings in effect (the reconciler config's `migration:` over the defaults). */
  settings: Required<CutoverSettings>;
  /** What started the cutover (`lag-threshold`, `synchronous-apply` or `fence`). */
  strategyUsed: CutoverReason | null;
  /** Seconds from streaming (every table copied) to the cutover. */
  secondsStreamingToCutover: number | null;
  /** Longest write pause a fence took on the source (ms); null without a fence. */
  longestWritePauseMillis: number | null;
  /** How writes were ordered while both instances took them (status `synchronousApply`). */
  synchronousApply: MigrationState['synchronousApply'];
}

/** {@link MoveCutover} from the settings and the claim's migration status after the move. */
export function moveCutover(
  settings: Required<CutoverSettings>,
  state: MigrationState | null | undefined,
): MoveCutover {
  const streamingAt = state?.streamingAt ? Date.parse(state.streamingAt) : Number.NaN;
  const cutoverAt = state?.cutoverAt ? Date.parse(state.cutoverAt) : Number.NaN;
  const seconds = (cutoverAt - streamingAt) / 1000;
  return {
    settings,
    strategyUsed: state?.cutoverStrategy ?? null,
    secondsStreamingToCutover: Number.isFinite(seconds) ? seconds : null,
    longestWritePauseMillis: state?.longestWritePauseMillis ?? null,
    synchronousApply: state?.synchronousApply ?? null,
  };
}

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
  /** The migration's settings and the strategy that started its cutover. */
  cutover: MoveCutover;
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

/**
 * Logical replication carries rows, not sequence positions. Before the application moves,
 * each target sequence is set past its source twin by a safety gap, so ids the source
 * still hands out while pools drain (and that replicate over) cannot collide with ids the
 * target starts handing out. After the drain, a final pass with no gap makes sure no
 * target sequence is behind the last value the source used. Only ever moves a sequence
 * forward (in its direction), so repeating either pass after a crash changes nothing.
 */
import type { SqlClient } from './sql-client.js';

interface SequencePosition {
  readonly name: string;
  readonly last: string | null;
  readonly increment: string;
}

async function positions(client: SqlClient): Promise<Map<string, SequencePosition>> {
  const { rows } = await client.query<SequencePosition>(
    `SELECT format('%I.%I', schemaname, sequencename) AS name, last_value::text AS last,
            increment_by::text AS increment FROM pg_sequences`,
  );
  return new Map(rows.map((r) => [r.name, r]));
}

/**
 * Moves every target sequence to at least the source's last value plus `gap` steps.
 * Returns how many sequences moved.
 */
export async function advanceSequences(
  source: SqlClient,
  target: SqlClient,
  gap: number,
  step: (action: string) => Promise<void>,
): Promise<number> {
  const wanted = await positions(source);
  const current = await positions(target);
  const moves: Array<[string, bigint]> = [];
  for (const [name, seq] of wanted) {
    if (seq.last === null) continue; // never used on the source
    const direction = BigInt(seq.increment) > 0n ? 1n : -1n;
    const goal = BigInt(seq.last) + BigInt(gap) * BigInt(seq.increment);
    const here = current.get(name)?.last;
    const behind = here == null || (direction > 0n ? BigInt(here) < goal : BigInt(here) > goal);
    if (behind) moves.push([name, goal]);
  }
  if (moves.length === 0) return 0;
  await step(gap > 0 ? 'advance-sequences' : 'sync-sequences');
  for (const [name, goal] of moves) {
    await target.query('SELECT setval($1::regclass, $2::bigint, true)', [name, goal.toString()]);
  }
  return moves.length;
}
